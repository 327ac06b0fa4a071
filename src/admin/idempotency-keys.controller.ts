import { Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../auth/scopes.js';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import {
  IdempotencyAdminService,
  IdempotencyCancellation,
  parseIdempotencyKey,
  type CancellationView,
} from '@idempotent-orders/nest-idempotency';
import { CREATE_ORDER_OPERATION } from '../orders/orders.service.js';
import { CancelKeyResponse, IdempotencyKeyResponse, ReleaseKeyResponse, type CancelOutcome } from './idempotency-key.response.js';

@ApiTags('idempotency-keys')
@ApiBearerAuth()
@ApiProblemResponse(400, '`idempotency_key_invalid`: the key in the path is not 1-255 printable ASCII characters')
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(429, '`rate_limited`: too many requests for your tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(503, '`store_unavailable`: retry after Retry-After', RETRY_AFTER_HEADER)
@RequireScope('admin')
@Controller({ path: 'idempotency-keys', version: '1' })
export class IdempotencyKeysController {
  constructor(
    private readonly admin: IdempotencyAdminService,
    private readonly cancellation: IdempotencyCancellation,
  ) {}

  @Get(':key')
  @ApiOperation({ summary: 'One of your keys: status, lease, expiry and recovery point per operation (never the stored body)' })
  @ApiOkResponse({
    type: IdempotencyKeyResponse,
    description: "The key's records",
    headers: {
      Location: { description: 'What the key created (its stored response had a `Location`), when it did', schema: { type: 'string' } },
    },
  })
  @ApiProblemResponse(404, '`idempotency_key_not_found`')
  async describe(@Tenant() tenant: string, @Param('key') key: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const view = await this.admin.describe(tenant, parseIdempotencyKey(key));
    if (view.location) void reply.header('location', view.location);
    return view;
  }

  @Post(':key/release')
  @HttpCode(200)
  @ApiOperation({ summary: 'Hand a pending key whose lease expired to the reaper now (never a live lease)' })
  @ApiQuery({ name: 'operation', required: false, description: 'Needed only when the key is pending for several operations' })
  @ApiOkResponse({ type: ReleaseKeyResponse, description: "What the reaper did with the key's pending attempt" })
  @ApiProblemResponse(400, '`idempotency_key_invalid`, or `idempotency_operation_required`: the key is pending for several operations')
  @ApiProblemResponse(404, '`idempotency_key_not_found`: no pending record for this key (and operation)')
  @ApiProblemResponse(
    409,
    '`idempotency_lease_active`: a live request holds the key; Retry-After is when its lease expires',
    RETRY_AFTER_HEADER,
  )
  release(@Tenant() tenant: string, @Param('key') key: string, @Query('operation') operation?: string) {
    return this.admin.release(tenant, parseIdempotencyKey(key), typeof operation === 'string' ? operation : undefined);
  }

  @Post(':key/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel your key for `orders.create`: undo what it did, or make sure it never runs (repeating it does nothing again)',
    description:
      'For a client that lost the answer and wants the order undone rather than retried. Never run: the key is canceled, so a create ' +
      'under it never runs later. In flight: the charge key is canceled at the provider and the order fails (a charge found instead is ' +
      'saved and refunded). Charged: a full refund of what is left, keyed from the key; authorized: the authorization voided. From the cancel on, every request under the key, whatever its ' +
      'body, gets 409 `idempotency_key_canceled` (with the order in `Location` when there is one).',
  })
  @ApiOkResponse({
    type: CancelKeyResponse,
    description: 'The key is canceled; the same answer on every repeat',
    headers: { Location: { description: 'The order the key created, when it created one', schema: { type: 'string' } } },
  })
  @ApiProblemResponse(
    409,
    '`idempotency_lease_active`: another cancel of this key is still running; `cancel_in_progress`: a refund of the order is still in flight ' +
      '(the cancel settles only on final money); retry after Retry-After',
    RETRY_AFTER_HEADER,
  )
  @ApiProblemResponse(
    422,
    '`cancel_refund_refused`: the refund that undoes the order was refused (`refundStatus`, `refundCode`); the key stays canceled for new requests',
  )
  @ApiProblemResponse(
    501,
    '`cancel_undo_unavailable`: the order holds money the cancel cannot give back (an undo refund an earlier release recorded ' +
      'under another request); the key stays canceled for new requests, for a human to settle',
  )
  async cancel(
    @Tenant() tenant: string,
    @Param('key') key: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<CancelKeyResponse> {
    const view = await this.cancellation.cancel(tenant, CREATE_ORDER_OPERATION, parseIdempotencyKey(key));
    if (view.location) void reply.header('location', view.location);
    return cancelResponse(view);
  }
}

function cancelResponse(view: CancellationView): CancelKeyResponse {
  const { orderId, refundId } = view.references;
  return {
    key: view.key,
    operation: view.operation,
    status: view.status,
    outcome: view.outcome as CancelOutcome,
    ...(orderId ? { orderId } : {}),
    ...(refundId ? { refundId } : {}),
    canceledAt: view.canceledAt.toISOString(),
  };
}
