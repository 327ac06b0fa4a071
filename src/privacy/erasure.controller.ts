import { Controller, Delete, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Tenant } from '../auth/tenant.js';
import { DomainError } from '../common/domain-error.js';
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
@Controller({ path: 'customers', version: '1' })
export class ErasureController {
  constructor(private readonly erasure: ErasureService) {}

  @Delete(':customerId/data')
  @ApiOperation({ summary: "Erase one of your customers' personal data (stored responses, customer id); the books keep their amounts" })
  async erase(@Tenant() tenant: string, @Param('customerId') customerId: string) {
    if (!CUSTOMER_ID.test(customerId)) throw new InvalidCustomerIdError();
    const erasure = await this.erasure.eraseCustomer(tenant, customerId);
    return { erasureId: erasure._id, erasedAt: erasure.erasedAt.toISOString(), counts: erasure.counts };
  }
}
