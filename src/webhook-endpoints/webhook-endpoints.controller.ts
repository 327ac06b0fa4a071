import { Body, Controller, Delete, Get, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiIdempotent } from '@idempotent-orders/nest-idempotency/openapi';
import { IdempotencyKey, type IdempotencyKeyContext, Idempotent, sendIdempotentResult } from '@idempotent-orders/nest-idempotency';
import { RequireScope } from '../auth/scopes.js';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { encodeCursor } from '../common/page-cursor.js';
import { PageQuery } from '../common/page.query.js';
import { CreateWebhookEndpointDto } from './dto/create-webhook-endpoint.dto.js';
import { UpdateWebhookEndpointDto } from './dto/update-webhook-endpoint.dto.js';
import {
  CreatedWebhookEndpointResponse,
  DeletedWebhookEndpointResponse,
  RetriedDeliveryResponse,
  RotatedSecretResponse,
  WebhookDeliveryListResponse,
  WebhookEndpointListResponse,
  WebhookEndpointResponse,
} from './dto/webhook-endpoint.response.js';
import { deliveryView, endpointView } from './webhook-endpoint.view.js';
import {
  CREATE_ENDPOINT_OPERATION,
  RETRY_DELIVERY_OPERATION,
  ROTATE_SECRET_OPERATION,
  WebhookEndpointsService,
} from './webhook-endpoints.service.js';

@ApiTags('webhook-endpoints')
@ApiBearerAuth()
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(429, '`rate_limited`: too many requests for your tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(503, '`store_unavailable`: retry after Retry-After', RETRY_AFTER_HEADER)
@RequireScope('admin')
@Controller({ path: 'webhook-endpoints', version: '1' })
export class WebhookEndpointsController {
  constructor(private readonly service: WebhookEndpointsService) {}

  @Post()
  @Idempotent({ operation: CREATE_ENDPOINT_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'Register an endpoint that receives your events, signed (Standard Webhooks), once per Idempotency-Key' })
  @ApiCreatedResponse({
    type: CreatedWebhookEndpointResponse,
    description: 'The endpoint and its signing secret; a retry with the same key gets these bytes again',
  })
  @ApiProblemResponse(400, '`malformed_json` or `validation_failed`')
  @ApiProblemResponse(
    409,
    '`idempotency_key_in_use`: this key is in flight, retry after Retry-After. `webhook_endpoint_limit` (`limit`): your account has ' +
      'as many endpoints as it may (OUTGOING_WEBHOOKS_MAX_ENDPOINTS_PER_TENANT, 16 unless set); nothing stored, the key stays free',
    RETRY_AFTER_HEADER,
  )
  @ApiProblemResponse(
    422,
    '`webhook_url_refused` (`reason`): not https in production, or a private address; nothing stored. `idempotency_key_reused`',
  )
  async create(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() dto: CreateWebhookEndpointDto,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.service.create(tenant, dto, key));
  }

  @Get()
  @ApiOperation({ summary: 'Your endpoints, newest first (never their secrets)' })
  @ApiOkResponse({ type: WebhookEndpointListResponse })
  async list(@Tenant() tenant: string) {
    return { data: (await this.service.list(tenant)).map(endpointView) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One of your endpoints (404 for any other)' })
  @ApiOkResponse({ type: WebhookEndpointResponse })
  @ApiProblemResponse(404, '`webhook_endpoint_not_found`')
  async get(@Tenant() tenant: string, @Param('id') id: string) {
    return endpointView(await this.service.get(tenant, id));
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change the URL or the events, or disable and enable the endpoint' })
  @ApiOkResponse({ type: WebhookEndpointResponse })
  @ApiProblemResponse(400, '`malformed_json` or `validation_failed`')
  @ApiProblemResponse(404, '`webhook_endpoint_not_found`')
  @ApiProblemResponse(422, '`webhook_url_refused` (`reason`)')
  async update(@Tenant() tenant: string, @Param('id') id: string, @Body() dto: UpdateWebhookEndpointDto) {
    return endpointView(await this.service.update(tenant, id, dto));
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Remove the endpoint: nothing more is sent to it' })
  @ApiOkResponse({ type: DeletedWebhookEndpointResponse, description: 'Removed' })
  @ApiProblemResponse(404, '`webhook_endpoint_not_found`')
  async remove(@Tenant() tenant: string, @Param('id') id: string): Promise<DeletedWebhookEndpointResponse> {
    await this.service.remove(tenant, id);
    return { id, deleted: true };
  }

  @Post(':id/rotate-secret')
  @Idempotent({ operation: ROTATE_SECRET_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'A new signing secret; for 24 hours both secrets sign every delivery' })
  @ApiOkResponse({ type: RotatedSecretResponse })
  @ApiProblemResponse(404, '`webhook_endpoint_not_found`')
  @ApiProblemResponse(409, '`idempotency_key_in_use`', RETRY_AFTER_HEADER)
  @ApiProblemResponse(422, '`idempotency_key_reused`')
  async rotateSecret(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.service.rotateSecret(tenant, id, key));
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "The endpoint's deliveries, newest first: status and every attempt (time, HTTP status, duration)" })
  @ApiOkResponse({ type: WebhookDeliveryListResponse, description: 'One page of deliveries' })
  @ApiProblemResponse(400, '`invalid_cursor`, or `validation_failed` (a `limit` out of range, an unknown parameter)')
  @ApiProblemResponse(404, '`webhook_endpoint_not_found`')
  async deliveries(@Tenant() tenant: string, @Param('id') id: string, @Query() query: PageQuery) {
    const page = await this.service.deliveriesOf(tenant, id, query.limit ?? 20, query.cursor);
    return { data: page.items.map(deliveryView), nextCursor: page.next ? encodeCursor(page.next) : null };
  }

  @Post(':id/deliveries/:eventId/retry')
  @Idempotent({ operation: RETRY_DELIVERY_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'Send the event to the endpoint again now, with the same `webhook-id`' })
  @ApiAcceptedResponse({ type: RetriedDeliveryResponse, description: 'The delivery is pending again' })
  @ApiProblemResponse(404, '`webhook_endpoint_not_found` or `webhook_delivery_not_found`')
  @ApiProblemResponse(409, '`idempotency_key_in_use`', RETRY_AFTER_HEADER)
  @ApiProblemResponse(422, '`idempotency_key_reused`')
  async retry(
    @Tenant() tenant: string,
    @Param('id') id: string,
    @Param('eventId') eventId: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.service.retryDelivery(tenant, id, eventId, key));
  }
}
