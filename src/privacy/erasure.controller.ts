import { Controller, Delete, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../auth/scopes.js';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { DomainError } from '../common/domain-error.js';
import { ErasureResponse } from './dto/erasure.response.js';
import { ErasureService } from './erasure.service.js';

const CUSTOMER_ID = /^[A-Za-z0-9_-]{1,64}$/;

export class InvalidCustomerIdError extends DomainError {
  readonly code = 'invalid_customer_id';
  constructor() {
    super('customerId must be 1-64 letters, digits, _ or -.');
  }
}

@ApiTags('privacy')
@ApiBearerAuth()
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(429, '`rate_limited`: too many requests for your tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(
  503,
  '`store_unavailable` or `cache_unavailable`: nothing erased; `cache_invalidation_failed`: erased, Redis not told yet. Retry after Retry-After in each case',
  RETRY_AFTER_HEADER,
)
@RequireScope('privacy')
@Controller({ path: 'customers', version: '1' })
export class ErasureController {
  constructor(private readonly erasure: ErasureService) {}

  @Delete(':customerId/data')
  @ApiOperation({ summary: "Erase one of your customers' personal data (stored responses, customer id); the books keep their amounts" })
  @ApiOkResponse({ type: ErasureResponse, description: 'Erased, in one transaction' })
  @ApiProblemResponse(400, '`invalid_customer_id`')
  async erase(@Tenant() tenant: string, @Param('customerId') customerId: string) {
    if (!CUSTOMER_ID.test(customerId)) throw new InvalidCustomerIdError();
    const erasure = await this.erasure.eraseCustomer(tenant, customerId);
    return { erasureId: erasure._id, erasedAt: erasure.erasedAt.toISOString(), counts: erasure.counts };
  }
}
