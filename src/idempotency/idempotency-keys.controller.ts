import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Tenant } from '../auth/tenant.js';
import { IdempotencyAdminService } from './idempotency-admin.service.js';
import { parseIdempotencyKey } from './idempotency-key.js';

@ApiTags('idempotency-keys')
@ApiBearerAuth()
@Controller({ path: 'idempotency-keys', version: '1' })
export class IdempotencyKeysController {
  constructor(private readonly admin: IdempotencyAdminService) {}

  @Get(':key')
  @ApiOperation({ summary: "One of your keys: status, lease, expiry and recovery point per operation (never the stored body)" })
  @ApiResponse({ status: 404, description: '`idempotency_key_not_found`' })
  describe(@Tenant() tenant: string, @Param('key') key: string) {
    return this.admin.describe(tenant, parseIdempotencyKey(key));
  }

  @Post(':key/release')
  @HttpCode(200)
  @ApiOperation({ summary: 'Hand a pending key whose lease expired to the reaper now (never a live lease)' })
  @ApiQuery({ name: 'operation', required: false, description: 'Needed only when the key is pending for several operations' })
  @ApiResponse({ status: 409, description: '`idempotency_lease_active`: a live request holds the key' })
  release(@Tenant() tenant: string, @Param('key') key: string, @Query('operation') operation?: string) {
    return this.admin.release(tenant, parseIdempotencyKey(key), typeof operation === 'string' ? operation : undefined);
  }
}
