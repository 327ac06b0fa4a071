import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { toProblemResponse, sendProblem } from '../common/problem-details.filter.js';
import { DomainError } from '../common/domain-error.js';
import type { WebhooksConfig } from '../config/config.tokens.js';
import { isSignedRawBodyRoute, signatureSchemeOf } from '../http/signed-raw-body.js';
import type { MetricsService } from '../metrics/metrics.service.js';
import { WebhookVerifier } from './webhook-verifier.js';
import {
  WebhookPayloadTooLargeError,
  WebhookSignatureInvalidError,
  WebhookSourceRateLimitedError,
  WebhookTimestampOutOfToleranceError,
} from './webhooks.errors.js';

export const WEBHOOK_REFUSAL_WINDOW_MS = 60_000;
/**
 * Sources tracked in one window. Past it a new source is neither counted nor
 * refused: the table cannot grow (a spoofed-source flood cannot grow memory),
 * and a flood of fresh addresses cannot spend a budget that a provider's
 * delivery from an address not yet seen would then be refused on (it used to
 * share one budget of `limit` refusals with every other newcomer, so 10,060
 * junk requests from distinct addresses blocked every provider delivery for
 * the rest of the window). What an untracked stranger sends is still refused
 * on its headers or its signature, one request at a time.
 */
export const MAX_WEBHOOK_SOURCES = 10_000;

/**
 * Refused webhook deliveries per source (request.ip: the socket's address,
 * or the balancer's X-Forwarded-For only when TRUST_PROXY names it; an IPv6
 * address counts by its /64, the block one host is handed), in a fixed
 * window. Only refusals count: a provider's valid deliveries are never
 * throttled, whatever their rate; a source that keeps sending what fails is
 * refused before anything of its request is read.
 */
export class WebhookRefusals {
  private readonly counts = new Map<string, number>();
  private windowStart: number;

  /** `limit`: WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE; 0 = no limit. */
  constructor(
    private readonly limit: number,
    private readonly windowMs = WEBHOOK_REFUSAL_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.windowStart = now();
  }

  /** Seconds until this source may try again, or 0. */
  blockedFor(source: string): number {
    if (this.limit === 0) return 0;
    this.roll();
    const count = this.counts.get(sourceKey(source)) ?? 0;
    return count >= this.limit ? Math.max(1, Math.ceil((this.windowStart + this.windowMs - this.now()) / 1000)) : 0;
  }

  refused(source: string): void {
    if (this.limit === 0) return;
    this.roll();
    const key = sourceKey(source);
    const count = this.counts.get(key);
    if (count === undefined && this.counts.size >= MAX_WEBHOOK_SOURCES) return;
    this.counts.set(key, (count ?? 0) + 1);
  }

  private roll(): void {
    if (this.now() - this.windowStart < this.windowMs) return;
    this.counts.clear();
    this.windowStart = this.now();
  }
}

/**
 * An IPv6 address by its first four groups (its /64); anything else as it is.
 * By hand: request.ip is already a parsed address (Node's or proxy-addr's), and
 * expanding `::` is all this needs - no dependency for ten lines.
 */
export function sourceKey(source: string): string {
  if (!source.includes(':') || isIPv4Mapped(source)) return source;
  const [head = '', tail = ''] = source.toLowerCase().split('%')[0].split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === '' ? [] : tail.split(':');
  const groups = source.includes('::')
    ? [...headGroups, ...Array<string>(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill('0'), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

function isIPv4Mapped(source: string): boolean {
  return /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(source);
}

/**
 * The provider's door, before the body is read (security review 3,
 * SEC4-04): a stranger's delivery used to be refused only after its whole
 * body had arrived and been hashed once per secret, and one with headers
 * only held its socket until the request timeout. Here, on the headers: a
 * declared body over WEBHOOK_BODY_LIMIT_BYTES (413), and missing,
 * malformed or repeated signature headers or a timestamp outside the
 * tolerance (401/400) - or 429 once the source is over its refusal budget -
 * each answered at once, with `Connection: close` so the body is never
 * waited for. A delivery whose headers pass goes on to its signature check
 * over the body (the handler, which reports its own refusals to the same
 * budget) even from a source over budget: the budget is spent only on what
 * fails, so strangers behind the provider's address (a balancer with
 * TRUST_PROXY unset, a shared NAT) cannot get a genuine delivery refused.
 */
export function guardWebhookDoor(
  fastify: FastifyInstance,
  config: WebhooksConfig,
  metrics: MetricsService,
  refusals: WebhookRefusals,
): void {
  const verifier = new WebhookVerifier(config.secrets, config.toleranceSeconds);
  const logger = new Logger('ProblemDetails');
  const warnUntrustedProxy = untrustedProxyWarning();
  fastify.addHook('onRequest', (request, reply, done) => {
    // Not JSON: Fastify answers 415 before reading the body (its content-type check), as for every route.
    if (!isSignedRawBodyRoute(request) || !isJson(request.headers['content-type'])) return done();
    const source = sourceOf(request);
    warnUntrustedProxy(request);
    let refusal = headerRefusal(request, config, verifier);
    // Well-formed and in time: its signature decides, whatever the source's budget - a genuine delivery is never
    // refused by what strangers sharing its address sent (SEC5-06), and checking it costs microseconds.
    if (!refusal) return done();
    const retryAfter = refusals.blockedFor(source);
    if (retryAfter > 0) refusal = new WebhookSourceRateLimitedError(retryAfter);
    else refusals.refused(source);
    metrics.webhookRefused.inc({ code: refusal.code });
    reply.header('connection', 'close');
    sendProblem(reply, toProblemResponse(refusal, logger));
  });
}

/** Why the headers alone refuse this delivery (size, signature headers, timestamp), or undefined. */
function headerRefusal(request: FastifyRequest, config: WebhooksConfig, verifier: WebhookVerifier): DomainError | undefined {
  if (Number(request.headers['content-length'] ?? 0) > config.bodyLimitBytes) return new WebhookPayloadTooLargeError(config.bodyLimitBytes);
  try {
    if (signatureSchemeOf(request) === 'standard-webhooks') verifier.checkHeaders(request.raw.headersDistinct);
    // Stripe's door checks its one Stripe-Signature with the SDK (payment-stripe/stripe-webhooks.controller.ts); here its form only.
    else checkStripeSignatureHeader(request.raw.headersDistinct['stripe-signature'], config.toleranceSeconds);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return error;
  }
  return undefined;
}

/** `t=<unix seconds>,v1=<64 hex>[,...]`, once, inside the tolerance: what the SDK will verify, nothing computed yet. */
function checkStripeSignatureHeader(values: string[] | undefined, toleranceSeconds: number): void {
  if (values?.length !== 1) throw new WebhookSignatureInvalidError('Exactly one Stripe-Signature header is required.');
  const parts = values[0].split(',').map((part) => part.trim().split('='));
  const timestamp = parts.find(([name]) => name === 't')?.[1] ?? '';
  if (!/^\d{1,12}$/.test(timestamp) || !parts.some(([name, value]) => name === 'v1' && /^[0-9a-f]{64}$/.test(value ?? ''))) {
    throw new WebhookSignatureInvalidError('The Stripe-Signature header holds no timestamp and v1 signature.');
  }
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) throw new WebhookTimestampOutOfToleranceError(toleranceSeconds);
}

/**
 * Once per process: a webhook delivery came through a proxy (X-Forwarded-For)
 * that TRUST_PROXY does not name, so request.ip is the proxy's and every
 * sender behind it shares one refusal budget. Not knowable at boot (nothing
 * has arrived yet): said at the first such delivery.
 */
function untrustedProxyWarning(): (request: FastifyRequest) => void {
  let warned = false;
  return (request) => {
    if (warned || request.headers['x-forwarded-for'] === undefined || request.ip !== request.socket.remoteAddress) return;
    warned = true;
    new Logger('WebhookDoor').warn(
      `A webhook delivery came through a proxy (X-Forwarded-For) that TRUST_PROXY does not name: every sender behind ${request.ip} ` +
        'counts as one source for WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE. Set TRUST_PROXY to the balancer (docs/security.md).',
    );
  };
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType);
}

export function sourceOf(request: FastifyRequest): string {
  return request.ip ?? 'unknown';
}
