import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { StripeOpenApiValidator } from './openapi-validator.js';

/**
 * A local Stripe-compatible API for tests: the adapter talks real HTTP to it
 * through the official SDK (host/port/protocol). It keeps the Stripe
 * semantics the adapter relies on, as Stripe documents them:
 *
 * - Idempotency-Key: the first answer (status and body, 5xx included) is
 *   stored 24 hours and replayed with `Idempotent-Replayed: true`; the same
 *   key with other parameters or on another endpoint -> 400
 *   `idempotency_error`; the same key while its first request is executing
 *   -> 409 `idempotency_key_in_use`. Requests refused before execution
 *   (authentication, parameter validation) are not stored.
 * - PaymentIntents: requires_payment_method -> (confirm) succeeded |
 *   requires_capture | processing | requires_payment_method after a decline
 *   (402 card_error); capture only from requires_capture, at most
 *   amount_capturable; cancel from requires_* (not from processing,
 *   succeeded or canceled).
 * - Refunds: only of a succeeded PaymentIntent, at most what is left.
 * - Search is eventually consistent: an object is searchable `searchLagMs`
 *   after it changed.
 * - Events, signed for delivery (Stripe-Signature, the SDK's own signer)
 *   with the endpoint secret a test sets (`webhookSecret`).
 *
 * Every request and answer is checked against the OpenAPI subset
 * (openapi-validator.ts); violations are collected in `violations`.
 *
 * Test cards (Stripe's test PaymentMethods): pm_card_visa succeeds,
 * pm_card_chargeDeclined declines (card_declined), pm_card_refundFail
 * succeeds and its refunds fail, pm_card_threeDSecure2Required needs 3-D
 * Secure (requires_action; a card_error authentication_required with
 * error_on_requires_action). Fake-only: pm_card_async stays
 * `processing` until settle() (stands for an asynchronous method);
 * pm_card_unavailable finds Stripe down (503, nothing stored).
 */
export const FAKE_API_VERSION = '2026-10-28.endive';
const KEY_RETENTION_MS = 24 * 60 * 60 * 1000;

export type Fault =
  /** Process the request and store its answer, then drop the connection without answering. */
  | 'lose_answer'
  /** Process the request (the money moves), then answer 500 - stored under the key like Stripe does. */
  | 'server_error_after'
  /** Answer 409 idempotency_key_in_use without processing (another copy in flight). */
  | 'in_flight'
  /** Answer 503 without processing and without storing anything. */
  | 'unavailable';

interface StoredAnswer {
  fingerprint: string;
  storedAt: number;
  state: 'executing' | 'done';
  status: number;
  body: unknown;
}

type Json = Record<string, unknown>;

export interface FakeEvent {
  id: string;
  type: string;
  created: number;
  object: Json;
}

export class StripeFake {
  readonly validator = new StripeOpenApiValidator();
  readonly violations: string[] = [];
  /** Every request that reached the fake: method, path, idempotency key. */
  readonly requests: { method: string; path: string; key: string | null; status: number }[] = [];
  readonly intents = new Map<string, Json>();
  readonly refunds = new Map<string, Json>();
  readonly balanceTransactions: Json[] = [];
  readonly events: FakeEvent[] = [];
  /** Milliseconds an object takes to become searchable. */
  searchLagMs = 0;
  /** Added to the real clock: moves the fake past key retention. */
  clockOffsetMs = 0;
  /** Holds each POST this long while executing (to let a concurrent copy meet the 409). */
  executeDelayMs = 0;
  /**
   * How long a card authorization lasts: the charge's
   * payment_method_details.card.capture_before (Stripe: 7 days online, less
   * for some networks and merchant-initiated payments).
   */
  authorizationLifetimeSeconds = 7 * 24 * 60 * 60;
  /** The endpoint's signing secret (whsec_...): what `signed` signs with unless told otherwise. */
  webhookSecret = '';

  private readonly keys = new Map<string, StoredAnswer>();
  private readonly indexedAt = new Map<string, number>();
  private readonly faults: { match: RegExp; fault: Fault }[] = [];
  private server: Server | null = null;
  private counter = 0;

  constructor(private readonly secretKey = 'sk_test_fake0123456789') {}

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  /** The service's settings for the Stripe adapter on this fake (the test adds its own, e.g. STRIPE_MAX_NETWORK_RETRIES). */
  serviceEnv(webhookSecret = 'whsec_fake0123456789abcdef'): Record<string, string> {
    return {
      PAYMENT_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: this.secretKey,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_API_BASE: `http://127.0.0.1:${this.port}`,
    };
  }

  /** What to give the SDK (or STRIPE_API_BASE). */
  get apiBase(): { host: string; port: number; protocol: 'http' } {
    return { host: '127.0.0.1', port: this.port, protocol: 'http' };
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      // A fault of the fake itself is a test failure (violations), never an unhandled rejection.
      this.handle(req, res).catch((error: Error) => {
        this.violations.push(`fake failed: ${error.message}`);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"type":"api_error"}}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }

  reset(): void {
    this.keys.clear();
    this.authorizationLifetimeSeconds = 7 * 24 * 60 * 60;
    this.intents.clear();
    this.refunds.clear();
    this.indexedAt.clear();
    this.balanceTransactions.length = 0;
    this.events.length = 0;
    this.requests.length = 0;
    this.violations.length = 0;
    this.faults.length = 0;
    this.searchLagMs = 0;
    this.clockOffsetMs = 0;
    this.executeDelayMs = 0;
  }

  /** Whether Stripe holds an answer (or a request executing) under this key now: a replay, not a new request. */
  holds(key: string): boolean {
    const stored = this.keys.get(key);
    return !!stored && this.now() - stored.storedAt < KEY_RETENTION_MS;
  }

  /** Faults injected and not met yet: dropped. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** The next POST whose path matches gets this fault (once). */
  inject(fault: Fault, match: RegExp = /./): void {
    this.faults.push({ match, fault });
  }

  now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  /** An asynchronous payment decided by its method: processing -> succeeded or requires_payment_method (payment_failed). */
  settle(intentId: string, outcome: 'succeeded' | 'failed'): void {
    const intent = this.intents.get(intentId);
    if (!intent || intent.status !== 'processing') throw new Error(`${intentId} is not processing`);
    if (outcome === 'succeeded') this.succeed(intent, intent.amount as number);
    else {
      intent.status = 'requires_payment_method';
      intent.last_payment_error = { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'declined' };
      this.emit('payment_intent.payment_failed', intent);
    }
    this.touch(intent);
  }

  /**
   * A refund that Stripe answered `succeeded` (or `pending`) fails later, as
   * card refunds can days after (the card was closed, the issuer sent the
   * money back): the refund becomes `failed` with a failure_reason, the money
   * returns to the balance (a `refund_failure` balance transaction), and
   * Stripe sends refund.failed, charge.refund.updated and refund.updated.
   * Returns those events, in the order emitted.
   */
  failRefund(refundId: string, reason = 'expired_or_canceled_card'): FakeEvent[] {
    const refund = this.refunds.get(refundId);
    if (!refund || (refund.status !== 'succeeded' && refund.status !== 'pending')) throw new Error(`${refundId} did not succeed`);
    refund.status = 'failed';
    refund.failure_reason = reason;
    this.balanceTransactions.push({
      id: `txn_${this.id()}`,
      object: 'balance_transaction',
      amount: refund.amount,
      currency: refund.currency,
      created: Math.floor(this.now() / 1000),
      fee: 0,
      net: refund.amount,
      status: 'available',
      type: 'refund_failure',
      reporting_category: 'refund_failure',
      source: refund.id,
      _metadata: refund.metadata,
      _intent: refund.payment_intent,
    });
    const from = this.events.length;
    this.emit('refund.failed', refund);
    this.emit('charge.refund.updated', refund);
    this.emit('refund.updated', refund);
    return this.events.slice(from);
  }

  /** An event's delivery as Stripe sends it: the JSON body and its Stripe-Signature header (the SDK's own test signer). */
  signed(event: FakeEvent, secret = this.webhookSecret): { payload: string; header: string } {
    const payload = JSON.stringify({
      id: event.id,
      object: 'event',
      api_version: FAKE_API_VERSION,
      created: event.created,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: event.type,
      data: { object: event.object },
    });
    return { payload, header: Stripe.webhooks.generateTestHeaderString({ payload, secret }) };
  }

  // --- HTTP ---------------------------------------------------------------

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const method = req.method ?? 'GET';
    const raw = await readBody(req);
    const params = parseForm(method === 'GET' ? url.search.slice(1) : raw);
    const key = header(req, 'idempotency-key');
    const answer = (status: number, body: unknown, replayed = false) => {
      const problems = this.validator.response(method, url.pathname, status, body);
      this.violations.push(...problems);
      this.requests.push({ method, path: url.pathname, key, status });
      const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': `req_${this.id()}` };
      if (key) headers['idempotency-key'] = key;
      if (replayed) headers['idempotent-replayed'] = 'true';
      if (status >= 500) headers['stripe-should-retry'] = 'false';
      res.writeHead(status, headers).end(JSON.stringify(body));
    };
    if (header(req, 'authorization') !== `Bearer ${this.secretKey}`) {
      return answer(401, errorBody('invalid_request_error', 'Invalid API Key provided.'));
    }
    if (header(req, 'stripe-version') !== FAKE_API_VERSION) {
      this.violations.push(`Stripe-Version ${header(req, 'stripe-version')} is not the pinned ${FAKE_API_VERSION}`);
    }
    const problems = this.validator.request(method, url.pathname, params);
    if (problems.length > 0) {
      this.violations.push(...problems);
      return answer(400, errorBody('invalid_request_error', problems.join('; '), 'parameter_unknown'));
    }
    if (method !== 'POST' || !key) {
      const [status, body] = this.execute(method, url.pathname, params);
      return answer(status, body);
    }
    // Fake-only test card: Stripe is down for any request that uses it (503, nothing executed, nothing stored).
    if (params.payment_method === 'pm_card_unavailable')
      return answer(503, errorBody('api_error', 'The service is temporarily unavailable.'));
    const fingerprint = `${method} ${url.pathname} ${canonical(params)}`;
    const fault = this.takeFault(url.pathname);
    // Stripe down answers 503 to any request, a replay under a known key included: nothing executed, nothing stored.
    if (fault === 'unavailable') return answer(503, errorBody('api_error', 'The service is temporarily unavailable.'));
    const stored = this.keys.get(key);
    if (stored && this.now() - stored.storedAt < KEY_RETENTION_MS) {
      if (stored.fingerprint !== fingerprint) {
        return answer(
          400,
          errorBody(
            'idempotency_error',
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
          ),
        );
      }
      if (stored.state === 'executing') {
        return answer(
          409,
          errorBody(
            'invalid_request_error',
            'There is currently another in-progress request using this Idempotent Key.',
            'idempotency_key_in_use',
          ),
        );
      }
      if (fault === 'lose_answer') {
        // A replay's answer can be lost too.
        this.requests.push({ method, path: url.pathname, key, status: 0 });
        req.socket.destroy();
        return;
      }
      return answer(stored.status, stored.body, true);
    }
    if (fault === 'in_flight') {
      return answer(
        409,
        errorBody(
          'invalid_request_error',
          'There is currently another in-progress request using this Idempotent Key.',
          'idempotency_key_in_use',
        ),
      );
    }
    const entry: StoredAnswer = { fingerprint, storedAt: this.now(), state: 'executing', status: 0, body: null };
    this.keys.set(key, entry);
    if (this.executeDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.executeDelayMs));
    let [status, body] = this.execute(method, url.pathname, params);
    if (fault === 'server_error_after') [status, body] = [500, errorBody('api_error', 'An unknown error occurred.')];
    Object.assign(entry, { state: 'done', status, body });
    if (fault === 'lose_answer') {
      this.requests.push({ method, path: url.pathname, key, status: 0 });
      req.socket.destroy();
      return;
    }
    return answer(status, body);
  }

  private takeFault(path: string): Fault | null {
    const index = this.faults.findIndex((f) => f.match.test(path));
    if (index < 0) return null;
    return this.faults.splice(index, 1)[0].fault;
  }

  // --- the API ------------------------------------------------------------

  private execute(method: string, path: string, params: Json): [number, unknown] {
    let match: RegExpMatchArray | null;
    if (method === 'POST' && path === '/v1/payment_intents') return this.createIntent(params);
    if (method === 'GET' && path === '/v1/payment_intents/search') return this.search(params);
    if ((match = path.match(/^\/v1\/payment_intents\/([^/]+)$/)) && method === 'GET') return this.retrieve(match[1], params);
    if ((match = path.match(/^\/v1\/payment_intents\/([^/]+)\/capture$/))) return this.capture(match[1], params);
    if ((match = path.match(/^\/v1\/payment_intents\/([^/]+)\/cancel$/))) return this.cancel(match[1], params);
    if (method === 'POST' && path === '/v1/refunds') return this.createRefund(params);
    if (method === 'GET' && path === '/v1/refunds') return this.listRefunds(params);
    if (method === 'GET' && path === '/v1/balance_transactions') return this.listBalance(params);
    return [404, errorBody('invalid_request_error', `Unrecognized request URL (${method}: ${path}).`)];
  }

  private createIntent(params: Json): [number, unknown] {
    const amount = Number(params.amount);
    if (!Number.isSafeInteger(amount) || amount < 50) {
      return [400, errorBody('invalid_request_error', 'Amount must be at least 50 cents', 'amount_too_small', 'amount')];
    }
    const created = Math.floor(this.now() / 1000);
    const intent: Json = {
      id: `pi_${this.id()}`,
      object: 'payment_intent',
      amount,
      amount_capturable: 0,
      amount_received: 0,
      canceled_at: null,
      cancellation_reason: null,
      capture_method: params.capture_method ?? 'automatic_async',
      client_secret: `pi_secret_${this.id()}`,
      confirmation_method: 'automatic',
      created,
      currency: String(params.currency),
      customer: null,
      description: null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      metadata: (params.metadata as Json) ?? {},
      next_action: null,
      payment_method: (params.payment_method as string) ?? null,
      payment_method_types: ['card'],
      status: params.payment_method ? 'requires_confirmation' : 'requires_payment_method',
    };
    this.intents.set(intent.id as string, intent);
    this.touch(intent);
    this.emit('payment_intent.created', intent);
    if (params.confirm !== 'true') return [200, intent];
    const pm = intent.payment_method as string | null;
    if (pm === 'pm_card_chargeDeclined') {
      intent.status = 'requires_payment_method';
      intent.last_payment_error = {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'generic_decline',
        message: 'Your card was declined.',
      };
      this.emit('payment_intent.payment_failed', intent);
      return [
        402,
        {
          error: {
            type: 'card_error',
            code: 'card_declined',
            decline_code: 'generic_decline',
            message: 'Your card was declined.',
            payment_intent: { ...intent },
          },
        },
      ];
    }
    if (pm === 'pm_card_threeDSecure2Required') {
      // 3-D Secure required: the customer must authenticate (requires_action), unless the request asked Stripe to fail
      // instead (error_on_requires_action): then a card_error authentication_required and nothing charged.
      if (params.error_on_requires_action === 'true') {
        const error = {
          type: 'card_error',
          code: 'authentication_required',
          decline_code: 'authentication_required',
          message: 'Your card was declined. This transaction requires authentication.',
        };
        intent.status = 'requires_payment_method';
        intent.last_payment_error = error;
        this.emit('payment_intent.payment_failed', intent);
        return [402, { error: { ...error, payment_intent: { ...intent } } }];
      }
      intent.status = 'requires_action';
      intent.next_action = { type: 'use_stripe_sdk', use_stripe_sdk: {} };
      this.emit('payment_intent.requires_action', intent);
      return [200, { ...intent }];
    }
    if (pm === 'pm_card_async') {
      intent.status = 'processing';
      this.emit('payment_intent.processing', intent);
    } else if (intent.capture_method === 'manual') {
      intent.status = 'requires_capture';
      intent.amount_capturable = amount;
      intent.latest_charge = `ch_${this.id()}`;
      this.emit('payment_intent.amount_capturable_updated', intent);
    } else {
      this.succeed(intent, amount);
    }
    return [200, { ...intent }];
  }

  private succeed(intent: Json, received: number): void {
    intent.status = 'succeeded';
    intent.amount_capturable = 0;
    intent.amount_received = received;
    intent.latest_charge ??= `ch_${this.id()}`;
    this.balanceTransactions.push({
      id: `txn_${this.id()}`,
      object: 'balance_transaction',
      amount: received,
      currency: intent.currency,
      created: Math.floor(this.now() / 1000),
      fee: 0,
      net: received,
      status: 'available',
      type: 'charge',
      reporting_category: 'charge',
      source: intent.latest_charge,
      _metadata: intent.metadata,
      _intent: intent.id,
    });
    this.emit('payment_intent.succeeded', intent);
  }

  private retrieve(id: string, params: Json = {}): [number, unknown] {
    const intent = this.intents.get(id);
    if (!intent) return [404, errorBody('invalid_request_error', `No such payment_intent: '${id}'`, 'resource_missing', 'intent')];
    const expand = ([] as unknown[]).concat(params.expand ?? []).includes('latest_charge');
    if (!expand || typeof intent.latest_charge !== 'string') return [200, { ...intent }];
    // The charge as expanded: only what the adapter reads (the authorization's deadline, for a card held for capture).
    const captureBefore = (intent.created as number) + this.authorizationLifetimeSeconds;
    const card = intent.capture_method === 'manual' ? { capture_before: captureBefore } : {};
    return [
      200,
      { ...intent, latest_charge: { id: intent.latest_charge, object: 'charge', payment_method_details: { type: 'card', card } } },
    ];
  }

  private capture(id: string, params: Json): [number, unknown] {
    const intent = this.intents.get(id);
    if (!intent) return [404, errorBody('invalid_request_error', `No such payment_intent: '${id}'`, 'resource_missing', 'intent')];
    if (intent.status !== 'requires_capture') return unexpectedState(intent, 'capture');
    const amount = params.amount_to_capture === undefined ? (intent.amount_capturable as number) : Number(params.amount_to_capture);
    if (amount > (intent.amount_capturable as number)) {
      return [
        400,
        errorBody('invalid_request_error', 'Amount to capture is larger than capturable.', 'amount_too_large', 'amount_to_capture'),
      ];
    }
    if (amount < 1) {
      return [400, errorBody('invalid_request_error', 'Amount to capture must be positive.', 'amount_too_small', 'amount_to_capture')];
    }
    if (params.metadata) intent.metadata = { ...(intent.metadata as Json), ...(params.metadata as Json) };
    this.succeed(intent, amount);
    this.touch(intent);
    return [200, { ...intent }];
  }

  private cancel(id: string, params: Json): [number, unknown] {
    const intent = this.intents.get(id);
    if (!intent) return [404, errorBody('invalid_request_error', `No such payment_intent: '${id}'`, 'resource_missing', 'intent')];
    const cancelable = ['requires_payment_method', 'requires_capture', 'requires_confirmation', 'requires_action'];
    if (!cancelable.includes(intent.status as string)) return unexpectedState(intent, 'cancel');
    intent.status = 'canceled';
    intent.amount_capturable = 0;
    intent.canceled_at = Math.floor(this.now() / 1000);
    intent.cancellation_reason = (params.cancellation_reason as string) ?? null;
    this.touch(intent);
    this.emit('payment_intent.canceled', intent);
    return [200, { ...intent }];
  }

  /** Only the query form the adapter sends: metadata['key']:'value'. */
  private search(params: Json): [number, unknown] {
    const query = typeof params.query === 'string' ? params.query : '';
    const match = query.match(/^metadata\['([A-Za-z0-9_]+)'\]:'([^']*)'$/);
    if (!match) return [400, errorBody('invalid_request_error', `Unsupported query: ${query}`, 'parameter_invalid_string', 'query')];
    const visible = [...this.intents.values()].filter(
      (intent) => (this.indexedAt.get(intent.id as string) ?? Infinity) <= this.now() && (intent.metadata as Json)[match[1]] === match[2],
    );
    return [
      200,
      {
        object: 'search_result',
        data: visible.map((i) => ({ ...i })),
        has_more: false,
        next_page: null,
        url: '/v1/payment_intents/search',
      },
    ];
  }

  private createRefund(params: Json): [number, unknown] {
    const intent = this.intents.get(String(params.payment_intent));
    if (!intent) return [404, errorBody('invalid_request_error', 'No such payment_intent', 'resource_missing', 'payment_intent')];
    if (intent.status !== 'succeeded') {
      return [400, errorBody('invalid_request_error', 'This PaymentIntent has no succeeded charge to refund.', 'charge_not_refundable')];
    }
    const refunded = [...this.refunds.values()]
      .filter((r) => r.payment_intent === intent.id && r.status !== 'failed')
      .reduce((sum, r) => sum + (r.amount as number), 0);
    const left = (intent.amount_received as number) - refunded;
    const amount = params.amount === undefined ? left : Number(params.amount);
    if (left <= 0) return [400, errorBody('invalid_request_error', 'Charge has already been refunded.', 'charge_already_refunded')];
    if (amount > left)
      return [400, errorBody('invalid_request_error', 'Refund amount is greater than unrefunded amount.', 'amount_too_large', 'amount')];
    if (amount < 1) return [400, errorBody('invalid_request_error', 'Refund amount must be positive.', 'amount_too_small', 'amount')];
    const refund: Json = {
      id: `re_${this.id()}`,
      object: 'refund',
      amount,
      charge: intent.latest_charge,
      created: Math.floor(this.now() / 1000),
      currency: intent.currency,
      metadata: (params.metadata as Json) ?? {},
      payment_intent: intent.id,
      reason: null,
      status: intent.payment_method === 'pm_card_refundFail' ? 'failed' : 'succeeded',
    };
    this.refunds.set(refund.id as string, refund);
    if (refund.status === 'succeeded') {
      this.balanceTransactions.push({
        id: `txn_${this.id()}`,
        object: 'balance_transaction',
        amount: -amount,
        currency: intent.currency,
        created: refund.created,
        fee: 0,
        net: -amount,
        status: 'available',
        type: 'refund',
        reporting_category: 'refund',
        source: refund.id,
        _metadata: refund.metadata,
        _intent: intent.id,
      });
    }
    this.emit(refund.status === 'failed' ? 'refund.failed' : 'refund.created', refund);
    return [200, { ...refund }];
  }

  private listRefunds(params: Json): [number, unknown] {
    const data = [...this.refunds.values()].filter((r) => !params.payment_intent || r.payment_intent === params.payment_intent);
    return [200, { object: 'list', data, has_more: false, url: '/v1/refunds' }];
  }

  /** Newest first, cursor paging by starting_after, `created[gte]`/`created[lt]` filters, like Stripe's list endpoints. */
  private listBalance(params: Json): [number, unknown] {
    const created = (params.created as Json) ?? {};
    const limit = Math.min(Number(params.limit ?? 10), 100);
    let rows = [...this.balanceTransactions].reverse();
    if (created.gte !== undefined) rows = rows.filter((r) => (r.created as number) >= Number(created.gte));
    if (created.lt !== undefined) rows = rows.filter((r) => (r.created as number) < Number(created.lt));
    if (params.starting_after) rows = rows.slice(rows.findIndex((r) => r.id === params.starting_after) + 1);
    const expand = ([] as unknown[]).concat(params.expand ?? []).includes('data.source');
    if (params.type) rows = rows.filter((r) => r.type === params.type);
    const page = rows.slice(0, limit).map(({ _metadata, _intent, ...row }) => {
      if (!expand) return row;
      const source = String(row.source);
      if (source.startsWith('re_')) return { ...row, source: { ...this.refunds.get(source) } };
      return { ...row, source: { id: source, object: 'charge', metadata: _metadata, payment_intent: _intent } };
    });
    return [200, { object: 'list', data: page, has_more: rows.length > limit, url: '/v1/balance_transactions' }];
  }

  // --- helpers ----------------------------------------------------------------

  private touch(intent: Json): void {
    this.indexedAt.set(intent.id as string, this.now() + this.searchLagMs);
  }

  private emit(type: string, object: Json): void {
    this.events.push({ id: `evt_${this.id()}`, type, created: Math.floor(this.now() / 1000), object: { ...object } });
  }

  private id(): string {
    this.counter += 1;
    return `${randomBytes(8).toString('hex')}${this.counter.toString(36)}`;
  }
}

function unexpectedState(intent: Json, action: string): [number, unknown] {
  return [
    400,
    {
      error: {
        type: 'invalid_request_error',
        code: 'payment_intent_unexpected_state',
        message: `This PaymentIntent could not be ${action === 'capture' ? 'captured' : 'canceled'} because it has a status of ${String(intent.status)}.`,
        payment_intent: { ...intent },
      },
    },
  ];
}

function errorBody(type: string, message: string, code?: string, param?: string): Json {
  const error: Json = { type, message };
  if (code) error.code = code;
  if (param) error.param = param;
  return { error };
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Stripe's form encoding (`a[b][0]=x`) into nested objects and arrays.
 * Hand-written: twenty lines, and the well-known parser (qs) is not a
 * dependency of this project.
 */
export function parseForm(body: string): Json {
  const out: Json = {};
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const path = rawKey.replace(/\]/g, '').split('[');
    let node: Json | unknown[] = out;
    path.forEach((segment, index) => {
      const last = index === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[index + 1]);
      const slot = Array.isArray(node) ? (segment === '' ? node.length : Number(segment)) : segment;
      const container = node as Record<string | number, unknown>;
      if (last) container[slot] = value;
      else container[slot] ??= nextIsIndex ? [] : {};
      node = container[slot] as Json | unknown[];
    });
  }
  return out;
}

/** Key order does not change a request: the fingerprint of the same parameters is the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Json)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
