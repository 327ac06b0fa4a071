import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { encodeCursor } from '../common/page-cursor.js';
import { PageQuery } from '../common/page.query.js';
import { ApiIdempotent } from '@idempotent-orders/nest-idempotency/openapi';
import { IdempotencyKey, type IdempotencyKeyContext, Idempotent, sendIdempotentResult } from '@idempotent-orders/nest-idempotency';
import { CreateOrderDto } from './dto/create-order.dto.js';
import { OrderLedgerResponse } from './dto/order-ledger.response.js';
import { OrderPageResponse, OrderResponse } from './dto/order.response.js';
import { ledgerView, orderView } from './order.view.js';
import { CREATE_ORDER_OPERATION, OrdersService } from './orders.service.js';

@ApiTags('orders')
@ApiBearerAuth()
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(429, '`rate_limited`: too many requests for your tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(503, '`store_unavailable`: retry after Retry-After', RETRY_AFTER_HEADER)
@Controller({ path: 'orders', version: '1' })
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  @Idempotent({ operation: CREATE_ORDER_OPERATION, duplicateGuard: true })
  @ApiIdempotent({ duplicateGuard: true })
  @ApiOperation({ summary: 'Create and pay an order, exactly once per Idempotency-Key' })
  @ApiCreatedResponse({
    type: OrderResponse,
    description: 'The saved order. A retry with the same key and body gets these exact bytes again, with `Idempotent-Replayed: true`.',
    headers: {
      Location: { description: '/v1/orders/{id}', schema: { type: 'string' } },
      'Idempotent-Replayed': {
        description: '`true` when this is a stored response sent again',
        schema: { type: 'string', enum: ['true'] },
      },
      'Idempotency-Expires': { description: 'When the key stops being remembered (HTTP date)', schema: { type: 'string' } },
      'Idempotent-Original-Date': {
        description: 'On a replay only: when the original answer was stored (HTTP date), so a replay is not taken for a new order',
        schema: { type: 'string' },
      },
    },
  })
  @ApiAcceptedResponse({
    type: OrderResponse,
    description:
      'An asynchronous payment method (3-D Secure, bank transfer): the order is `processing` until the provider answers by webhook; ' +
      'poll the Location (GET /v1/orders/{id}) for `saved` or `failed`. A retry with the same key gets this 202 again, with `Idempotent-Replayed: true`.',
    // The schema's own example is a saved order; a 202 is always one still processing, with nothing charged yet.
    example: {
      id: 'ord_65f1c2a9b7e4d3f2a1b0c9d8',
      state: 'processing',
      customerId: 'cus_123',
      currency: 'USD',
      amountMinor: 2500,
      capture: 'automatic',
      authorizedMinor: 0,
      capturedMinor: 0,
      refundedMinor: 0,
      authorizationExpiresAt: null,
      items: [{ sku: 'sku_1', quantity: 2, unitPriceMinor: 1250 }],
      paymentId: null,
      failureReason: null,
      createdAt: '2026-12-01T09:30:00.000Z',
    },
    headers: {
      Location: { description: '/v1/orders/{id}: where the outcome appears', schema: { type: 'string' } },
      'Idempotent-Replayed': {
        description: '`true` when this is a stored response sent again',
        schema: { type: 'string', enum: ['true'] },
      },
      'Idempotency-Expires': { description: 'When the key stops being remembered (HTTP date)', schema: { type: 'string' } },
    },
  })
  @ApiProblemResponse(400, '`malformed_json`: the body is not JSON')
  @ApiProblemResponse(
    402,
    '`card_declined`: stored and replayed like a success (the problem carries `orderId`); a replay has `Idempotent-Replayed` and `Idempotent-Original-Date`',
  )
  @ApiProblemResponse(
    410,
    "`response_erased`: a replay of a key whose stored response was erased at the customer's request; the operation is not repeated",
  )
  @ApiProblemResponse(413, '`payload_too_large`: the body is over HTTP_BODY_LIMIT_BYTES')
  @ApiProblemResponse(415, '`unsupported_media_type`: send the body as application/json')
  @ApiProblemResponse(
    422,
    '`amount_out_of_range`: the total is not between 1 and 10^12 minor units, or outside what the payment provider accepts for the currency (Stripe: its minimum, 8 digits, tens in three-decimal currencies)',
  )
  @ApiProblemResponse(429, '`rate_limited`: too many requests on this key or tenant; see Retry-After', RETRY_AFTER_HEADER)
  @ApiProblemResponse(
    503,
    '`payment_provider_unavailable` or `store_unavailable`: nothing stored; retry with the same key after Retry-After',
    RETRY_AFTER_HEADER,
  )
  async create(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() dto: CreateOrderDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.orders.create(tenant, dto, key));
  }

  @Get()
  @ApiOperation({ summary: "The caller's orders, newest first" })
  @ApiOkResponse({ type: OrderPageResponse, description: 'One page of orders' })
  @ApiProblemResponse(400, '`invalid_cursor`, or `validation_failed` (a `limit` out of range, an unknown parameter)')
  async list(@Tenant() tenant: string, @Query() query: PageQuery) {
    const page = await this.orders.list(tenant, query.limit ?? 20, query.cursor);
    return { data: page.orders.map(orderView), nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One order of the caller (404 for any other)' })
  @ApiOkResponse({ type: OrderResponse, description: 'The order, in whatever state it is now' })
  @ApiProblemResponse(404, '`order_not_found`')
  async get(@Tenant() tenant: string, @Param('id') id: string) {
    return orderView(await this.orders.get(tenant, id));
  }

  @Get(':id/ledger')
  @ApiOperation({ summary: "The order's ledger entries" })
  @ApiOkResponse({ type: OrderLedgerResponse, description: "The order's journal lines" })
  @ApiProblemResponse(404, '`order_not_found`')
  async ledger(@Tenant() tenant: string, @Param('id') id: string) {
    return ledgerView(await this.orders.ledgerFor(tenant, id));
  }
}
