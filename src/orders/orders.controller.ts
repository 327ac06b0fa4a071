import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Tenant } from '../auth/tenant.js';
import { IdempotencyKey } from '../idempotency/idempotency-key.decorator.js';
import type { IdempotencyKeyContext } from '../idempotency/idempotency-key.interceptor.js';
import { Idempotent } from '../idempotency/idempotent.decorator.js';
import { sendIdempotentResult } from '../idempotency/idempotent-reply.js';
import { CreateOrderDto } from './dto/create-order.dto.js';
import { ListOrdersQuery } from './dto/list-orders.query.js';
import { encodeCursor, ledgerView, orderView } from './order.view.js';
import { CREATE_ORDER_OPERATION, OrdersService } from './orders.service.js';

const PROBLEM = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };

@ApiTags('orders')
@ApiBearerAuth()
@ApiResponse({ status: 401, description: '`unauthorized`: missing or unknown API key', content: PROBLEM })
@Controller({ path: 'orders', version: '1' })
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  @Idempotent({ operation: CREATE_ORDER_OPERATION })
  @ApiOperation({ summary: 'Create and pay an order, exactly once per Idempotency-Key' })
  @ApiCreatedResponse({
    description: 'The saved order. A retry with the same key and body gets these exact bytes again, with `Idempotent-Replayed: true`.',
    headers: {
      Location: { description: '/v1/orders/{id}', schema: { type: 'string' } },
      'Idempotent-Replayed': { description: '`true` when this is a stored response sent again', schema: { type: 'string', enum: ['true'] } },
      'Idempotency-Expires': { description: 'When the key stops being remembered (HTTP date)', schema: { type: 'string' } },
    },
  })
  @ApiResponse({ status: 402, description: '`card_declined`: stored and replayed like a success', content: PROBLEM })
  @ApiResponse({ status: 429, description: '`rate_limited`: too many requests on this key or tenant; see Retry-After', content: PROBLEM })
  @ApiResponse({
    status: 503,
    description: '`payment_provider_unavailable` or `store_unavailable`: nothing stored; retry with the same key after Retry-After',
    content: PROBLEM,
  })
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
  async list(@Tenant() tenant: string, @Query() query: ListOrdersQuery) {
    const page = await this.orders.list(tenant, query.limit ?? 20, query.cursor);
    return { data: page.orders.map(orderView), nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One order of the caller (404 for any other)' })
  @ApiResponse({ status: 404, description: '`order_not_found`', content: PROBLEM })
  async get(@Tenant() tenant: string, @Param('id') id: string) {
    return orderView(await this.orders.get(tenant, id));
  }

  @Get(':id/ledger')
  @ApiOperation({ summary: "The order's ledger entries" })
  async ledger(@Tenant() tenant: string, @Param('id') id: string) {
    return ledgerView(await this.orders.ledgerFor(tenant, id));
  }
}
