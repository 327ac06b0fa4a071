import { Body, Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiIdempotent } from '@idempotent-orders/nest-idempotency/openapi';
import { IdempotencyKey, type IdempotencyKeyContext, Idempotent, sendIdempotentResult } from '@idempotent-orders/nest-idempotency';
import { Tenant } from '../auth/tenant.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { RequestValidationError } from '../common/validation.js';
import { OrderResponse } from '../orders/dto/order.response.js';
import { CAPTURE_ORDER_OPERATION, VOID_ORDER_OPERATION } from './capture-void.js';
import { CaptureVoidService } from './capture-void.service.js';
import { CaptureOrderDto } from './dto/capture-order.dto.js';

const REPLAY_HEADERS = {
  'Idempotent-Replayed': { description: '`true` when this is a stored response sent again', schema: { type: 'string', enum: ['true'] } },
  'Idempotency-Expires': { description: 'When the key stops being remembered (HTTP date)', schema: { type: 'string' } },
  'Idempotent-Original-Date': {
    description: 'On a replay only: when the original answer was stored (HTTP date)',
    schema: { type: 'string' },
  },
};

/** Capture and void of a manual-capture order: keyed like the create, with the same fencing and recovery. */
@ApiTags('orders')
@ApiBearerAuth()
@ApiProblemResponse(401, '`unauthorized`: missing or unknown API key')
@ApiProblemResponse(404, '`order_not_found`')
@ApiProblemResponse(429, '`rate_limited`: too many requests on this key or tenant; see Retry-After', RETRY_AFTER_HEADER)
@ApiProblemResponse(
  503,
  '`payment_provider_unavailable` or `store_unavailable`: nothing stored; retry with the same key after Retry-After',
  RETRY_AFTER_HEADER,
)
@Controller({ path: 'orders', version: '1' })
export class CaptureVoidController {
  constructor(private readonly actions: CaptureVoidService) {}

  @Post(':id/capture')
  @HttpCode(200)
  @Idempotent({ operation: CAPTURE_ORDER_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'Capture an authorized order (all of it, or `amountMinor` of it), exactly once per Idempotency-Key' })
  @ApiOkResponse({
    type: OrderResponse,
    description:
      'The captured order (its ledger has the journal of the captured amount). A retry with the same key and body gets these bytes again.',
    headers: REPLAY_HEADERS,
  })
  @ApiProblemResponse(
    400,
    '`validation_failed` (an `amountMinor` that is not a positive integer, `null` included, or a body that is not a JSON object), `malformed_json`',
  )
  @ApiProblemResponse(
    409,
    '`order_not_capturable` (not authorized, or another capture or void in progress: nothing written), `idempotency_key_in_use`; stored and replayed: `authorization_voided`, `already_captured`',
    RETRY_AFTER_HEADER,
  )
  @ApiProblemResponse(
    422,
    '`capture_exceeds_authorized` (nothing written), `idempotency_key_reused`; stored and replayed: `authorization_expired` (the order is now expired), `payment_operation_refused`',
  )
  async capture(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('id') id: string,
    @Body() dto: CaptureOrderDto,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    // The validation pipe turns a `null` body into `{}` (the whole authorization): only no body at all means that.
    if (request.body !== undefined && !isJsonObject(request.body)) {
      throw new RequestValidationError(['the body must be a JSON object, or empty to capture the whole authorization']);
    }
    sendIdempotentResult(reply, await this.actions.capture(tenant, id, dto.amountMinor, key));
  }

  @Post(':id/void')
  @HttpCode(200)
  @Idempotent({ operation: VOID_ORDER_OPERATION })
  @ApiIdempotent()
  @ApiOperation({ summary: 'Void an authorized order (release the whole authorization), exactly once per Idempotency-Key; no body' })
  @ApiOkResponse({
    type: OrderResponse,
    description: 'The voided order. A retry with the same key gets these bytes again.',
    headers: REPLAY_HEADERS,
  })
  @ApiProblemResponse(
    409,
    '`order_not_voidable` (not authorized, or another capture or void in progress: nothing written), `idempotency_key_in_use`; stored and replayed: `already_captured`, `authorization_voided`',
    RETRY_AFTER_HEADER,
  )
  @ApiProblemResponse(
    422,
    '`idempotency_key_reused` (the key was used for another order); stored and replayed: `authorization_expired` (the order is now expired), `payment_operation_refused`',
  )
  async void(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('id') id: string,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    sendIdempotentResult(reply, await this.actions.void(tenant, id, key));
  }
}

function isJsonObject(body: unknown): boolean {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}
