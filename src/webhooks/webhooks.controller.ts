import { HttpCode, Inject, Post, Req, Controller } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Public } from '../auth/public.decorator.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { DomainError } from '../common/domain-error.js';
import { httpConfig, webhooksConfig, type HttpConfig, type WebhooksConfig } from '../config/config.tokens.js';
import { parseJsonBody } from '../http/json-body.js';
import { SignedRawBody } from '../http/signed-raw-body.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { WebhookReceiptResponse } from './dto/webhook-receipt.response.js';
import { readPaymentEvent } from './payment-event.js';
import { WebhookInbox, type InboxReceipt } from './webhook-inbox.service.js';
import { NotIJsonError } from '../http/json-body.js';
import { sourceOf, WebhookRefusals } from './webhook-door.js';
import { WebhookVerifier } from './webhook-verifier.js';
import { WebhookPayloadTooLargeError } from './webhooks.errors.js';

/** Fatal: text that is not UTF-8 is not JSON (RFC 8259 8.1), and the signature was over the bytes, not a repaired string. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The provider's door: authenticated by the Standard Webhooks signature over
 * the exact body, never by a tenant key. Order of checks, each refusing with
 * nothing written: size, signature and timestamp, JSON, event shape; only a
 * verified, well-formed event reaches the inbox. The body is never logged.
 */
@ApiTags('webhooks')
@Public()
@Controller({ path: 'webhooks', version: '1' })
export class WebhooksController {
  private readonly verifier: WebhookVerifier;

  constructor(
    private readonly inbox: WebhookInbox,
    private readonly metrics: MetricsService,
    private readonly refusals: WebhookRefusals,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
    @Inject(httpConfig.KEY) private readonly http: HttpConfig,
  ) {
    this.verifier = new WebhookVerifier(config.secrets, config.toleranceSeconds);
  }

  @Post('payments')
  @SignedRawBody()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Payment provider events (Standard Webhooks), applied exactly once',
    description:
      'Signed with HMAC-SHA256 over `webhook-id.webhook-timestamp.body` (Standard Webhooks); several `v1,` signatures are accepted (secret rotation). ' +
      'Any 2xx means the event is recorded: do not deliver it again. 5xx means nothing was recorded: deliver it again later.',
  })
  @ApiHeader({ name: 'webhook-id', required: true, description: 'The event id, the same on every delivery of the event' })
  @ApiHeader({ name: 'webhook-timestamp', required: true, description: 'Unix seconds when this delivery was signed' })
  @ApiHeader({ name: 'webhook-signature', required: true, description: 'Space-separated `v1,<base64 HMAC-SHA256>` signatures' })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['type', 'timestamp', 'data'],
      properties: {
        type: {
          type: 'string',
          example: 'charge.succeeded',
          description:
            'charge.processing, charge.succeeded, charge.failed; refund.failed (a refund the provider answered succeeded failed since); ' +
            'others are recorded only',
        },
        timestamp: { type: 'string', format: 'date-time' },
        data: {
          type: 'object',
          properties: {
            chargeKey: { type: 'string', example: 'charge:ord_65f1c2a9b7e4d3f2a1b0c9d8' },
            chargeId: { type: 'string', example: 'ch_3f9a' },
            amountMinor: { type: 'integer', minimum: 1 },
            currency: { type: 'string', pattern: '^[A-Z]{3}$' },
            sequence: { type: 'integer', minimum: 1, description: "The charge's own event counter at the provider" },
            failureReason: { type: 'string', description: 'charge.failed and refund.failed' },
            refundKey: { type: 'string', example: 'refund:re_65f1c2a9b7e4d3f2a1b0c9d8', description: 'refund.failed only' },
            providerRefundId: { type: 'string', description: 'refund.failed only' },
          },
        },
      },
    },
  })
  @ApiOkResponse({ type: WebhookReceiptResponse, description: 'Recorded (now, or by an earlier delivery: `duplicate`)' })
  @ApiProblemResponse(
    400,
    '`malformed_json`, `json_too_deep`, `json_too_many_values`, `json_not_i_json`, or `webhook_event_invalid`: nothing recorded',
  )
  @ApiProblemResponse(401, '`webhook_signature_invalid` (missing headers or no matching signature) or `webhook_timestamp_out_of_tolerance`')
  @ApiProblemResponse(413, '`payload_too_large`: the body is over WEBHOOK_BODY_LIMIT_BYTES')
  @ApiProblemResponse(415, '`unsupported_media_type`: send the body as application/json')
  @ApiProblemResponse(
    503,
    '`webhook_not_ready` (the order has not recorded its charge yet) or `store_unavailable`: nothing recorded; deliver again after Retry-After',
    RETRY_AFTER_HEADER,
  )
  async receive(@Req() request: FastifyRequest): Promise<InboxReceipt> {
    // The exact bytes received (app.setup.ts hands signed routes a Buffer): the HMAC is over them, never a decoded string.
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    let event;
    try {
      const delivery = this.verified(raw, request);
      let text: string;
      try {
        text = UTF8.decode(raw);
      } catch {
        throw new NotIJsonError('text that is not UTF-8');
      }
      const limits = { maxDepth: this.http.jsonMaxDepth, maxValues: this.http.jsonMaxValues };
      event = readPaymentEvent(delivery.id, parseJsonBody(text, limits));
    } catch (error) {
      if (error instanceof DomainError) this.metrics.webhookRefused.inc({ code: error.code });
      throw error;
    }
    return this.inbox.receive(event);
  }

  /** Size, headers and signature; a refusal here counts against the source's budget (webhook-door.ts). */
  private verified(raw: Buffer, request: FastifyRequest) {
    try {
      if (raw.length > this.config.bodyLimitBytes) throw new WebhookPayloadTooLargeError(this.config.bodyLimitBytes);
      return this.verifier.verify(raw, request.raw.headersDistinct);
    } catch (error) {
      if (error instanceof DomainError) this.refusals.refused(sourceOf(request));
      throw error;
    }
  }
}
