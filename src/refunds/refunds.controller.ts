import { Body, Controller, Get, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiIdempotent } from '@idempotent-orders/nest-idempotency/openapi';
import { IdempotencyKey, type IdempotencyKeyContext, Idempotent, sendIdempotentResult } from '@idempotent-orders/nest-idempotency';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { CreateRefundDto } from './dto/create-refund.dto.js';
import { RefundListResponse, RefundResponse } from './dto/refund.response.js';
import { refundView } from './refund.view.js';
import { REFUND_OPERATION, RefundsService } from './refunds.service.js';

@ApiTags('refunds')
@ApiBearerAuth()
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(404, '`order_not_found`: no such order for your account (nothing stored, the key stays unused)')
@ApiProblemResponse(429, '`rate_limited`: too many requests for your tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(503, '`store_unavailable`: retry after Retry-After', RETRY_AFTER_HEADER)
@Controller({ path: 'orders/:id/refunds', version: '1' })
export class RefundsController {
  constructor(private readonly refunds: RefundsService) {}

  @Post()
  @Idempotent({ operation: REFUND_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'Refund part or all of a captured order, exactly once per Idempotency-Key' })
  @ApiCreatedResponse({
    type: RefundResponse,
    description:
      'The refund, succeeded at the provider. A retry with the same key, order and body gets these exact bytes again, with `Idempotent-Replayed: true`.',
    headers: {
      Location: { description: '/v1/orders/{id}/refunds/{refundId}', schema: { type: 'string' } },
      'Idempotent-Replayed': {
        description: '`true` when this is a stored response sent again',
        schema: { type: 'string', enum: ['true'] },
      },
      'Idempotency-Expires': { description: 'When the key stops being remembered (HTTP date)', schema: { type: 'string' } },
      'Idempotent-Original-Date': {
        description: 'On a replay only: when the original answer was stored (HTTP date)',
        schema: { type: 'string' },
      },
    },
  })
  @ApiProblemResponse(400, '`malformed_json`, or `validation_failed` (an amount that is not an integer from 1, an unknown reason)')
  @ApiProblemResponse(
    402,
    '`refund_declined`: the issuer declined; stored and replayed like a success (the problem carries `refundId` and `orderId`); the order keeps its refundable amount',
  )
  @ApiProblemResponse(
    409,
    '`order_not_refundable`: the order holds no captured money in its state (the problem carries `state`); nothing stored. Or `idempotency_key_in_use`: this key is in flight, retry after Retry-After',
    RETRY_AFTER_HEADER,
  )
  @ApiProblemResponse(
    410,
    "`response_erased`: a replay of a key whose stored response was erased at the customer's request; the refund is not repeated",
  )
  @ApiProblemResponse(
    422,
    '`refund_exceeds_captured`: more than the order has left to refund (the problem carries `refundableMinor`), nothing stored; `refund_refused`: the provider refused (`reason`), stored and replayed; `idempotency_key_reused`: this key was used with another order or body',
  )
  @ApiProblemResponse(
    503,
    '`payment_provider_unavailable` or `store_unavailable`: nothing stored; retry with the same key after Retry-After (the same refund resumes)',
    RETRY_AFTER_HEADER,
  )
  async create(
    @Tenant() tenant: string,
    @Param('id') orderId: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() dto: CreateRefundDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.refunds.create(tenant, orderId, dto, key));
  }

  @Get()
  @ApiOperation({ summary: "The order's refunds, oldest first, in every state" })
  @ApiOkResponse({ type: RefundListResponse, description: "The order's refunds" })
  async list(@Tenant() tenant: string, @Param('id') orderId: string) {
    return { data: (await this.refunds.list(tenant, orderId)).map(refundView) };
  }

  @Get(':refundId')
  @ApiOperation({ summary: 'One refund of one of your orders (404 for any other)' })
  @ApiOkResponse({ type: RefundResponse, description: 'The refund, in whatever state it is now' })
  @ApiProblemResponse(404, '`order_not_found` or `refund_not_found`')
  async get(@Tenant() tenant: string, @Param('id') orderId: string, @Param('refundId') refundId: string) {
    return refundView(await this.refunds.get(tenant, orderId, refundId));
  }
}
