// The client: one key per logical operation, stored before the first send,
// the same key on every retry, and a typed error when it stops.
import { decide, type AttemptOutcome, type Decision } from './decision.js';
import { IdempotentRequestError } from './errors.js';
import { deriveIdempotencyKey, isValidIdempotencyKey, randomIdempotencyKey } from './idempotency-key.js';
import type { KeyStore } from './key-store.js';
import { MemoryKeyStore } from './memory-key-store.js';
import { planRetry, retryPolicy, type RetryPolicy, type RetryPolicyOptions } from './retry-policy.js';

/** How the client is built. */
export interface IdempotentClientOptions {
  /** `https://api.example.com` (a path prefix is kept: `https://host/api` + `/v1/orders`). */
  baseUrl: string | URL;
  /** Sent with every request, e.g. `{ authorization: 'Bearer ...' }`. */
  headers?: Record<string, string>;
  /** Where each operation's key lives from before its first send (default: memory). */
  keyStore?: KeyStore;
  retry?: RetryPolicyOptions;
  /** The fetch to send with (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** Called after every attempt, with its decision (and the wait before the next): for logs and tests. */
  onAttempt?: (event: AttemptEvent) => void;
  /**
   * Debug logging of every attempt, one line each (`describeAttempt`): off by
   * default; `true` writes to stderr (console.error), a function receives the
   * lines (your logger's debug). Unset, NODE_DEBUG=idempotent-client turns it
   * on, as Node's own modules do. A retrying request is then never silent.
   */
  debug?: boolean | ((line: string) => void);
}

/** One logical operation's request. */
export interface IdempotentRequest {
  /** Default POST. */
  method?: string;
  /** `/v1/orders`, resolved against the base URL. */
  path: string;
  /** Serialized as JSON once: every attempt sends the same bytes. */
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Derive the key from these ids (see deriveIdempotencyKey) instead of a
   * random UUID, e.g. `[conversationId, toolCallId]`: the same call gets the
   * same key even where the store was lost.
   */
  keyFrom?: string | readonly string[];
  /** Aborts the whole request (every attempt and every wait); the key stays stored. */
  signal?: AbortSignal;
}

/** A 2xx, first-hand or replayed. */
export interface IdempotentResult<T = unknown> {
  status: number;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: T;
  headers: Headers;
  /** The server answered from its record (`Idempotent-Replayed: true`): the operation had run before. */
  replayed: boolean;
  attempts: number;
  /** The Idempotency-Key every attempt carried. */
  key: string;
}

/** One attempt, as `onAttempt` sees it. */
export interface AttemptEvent {
  operationId: string;
  key: string;
  /** 1-based. */
  attempt: number;
  /** Status of the answer; undefined when there was none. */
  status?: number;
  /** The network error or timeout, when there was no answer. */
  error?: unknown;
  decision: Decision;
  /** The wait before the next attempt, when there is one. */
  delayMs?: number;
}

/** Where debug lines go: the option, else NODE_DEBUG=idempotent-client, else nowhere. */
function debugSink(option: IdempotentClientOptions['debug']): ((line: string) => void) | undefined {
  if (typeof option === 'function') return option;
  const fromEnv = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.NODE_DEBUG;
  const enabled = option ?? (fromEnv ?? '').split(/[\s,]+/).includes('idempotent-client');
  return enabled ? (line) => console.error(line) : undefined;
}

/**
 * One attempt as a debug line: the operation, the key, the attempt, what came
 * back and what the client does next, e.g.
 * `idempotent-client op-1 key=9f2c... attempt 2: 503 payment_provider_unavailable -> retry same key in 1200 ms (guidance: retryable)`.
 */
export function describeAttempt(event: AttemptEvent): string {
  const answer =
    event.status !== undefined
      ? `${event.status}${event.decision.action !== 'done' && event.decision.problem?.code ? ` ${event.decision.problem.code}` : ''}`
      : `no answer (${event.error instanceof Error ? event.error.message : String(event.error)})`;
  const decision = event.decision;
  const next =
    decision.action === 'done'
      ? decision.replayed
        ? 'done (replayed: it had run before)'
        : 'done'
      : decision.action === 'stop'
        ? `stop (${decision.source}: ${decision.reason}; new key safe: ${decision.newKeySafe})`
        : event.delayMs !== undefined
          ? `retry same key in ${event.delayMs} ms (${decision.source}: ${decision.reason})`
          : `give up (${decision.source}: ${decision.reason})`;
  return `idempotent-client ${event.operationId} key=${event.key} attempt ${event.attempt}: ${answer} -> ${next}`;
}

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json\b/i;

/**
 * An HTTP client for idempotent APIs (`Idempotency-Key`, draft-ietf-httpapi-idempotency-key-header):
 * `request(operationId, ...)` gets or creates the operation's key in the store
 * before the first send, retries with that key only, with backoff and full
 * jitter that honours `Retry-After`, and stops on what a retry cannot change.
 */
export class IdempotentClient {
  private readonly baseUrl: URL;
  private readonly headers: Record<string, string>;
  private readonly keyStore: KeyStore;
  private readonly policy: RetryPolicy;
  private readonly fetch: typeof globalThis.fetch;
  private readonly onAttempt: (event: AttemptEvent) => void;

  constructor(options: IdempotentClientOptions) {
    const base = new URL(options.baseUrl);
    // `new URL('v1/orders', 'https://host/api/')` keeps /api; without the slash it would be replaced.
    if (!base.pathname.endsWith('/')) base.pathname = `${base.pathname}/`;
    this.baseUrl = base;
    this.headers = { ...(options.headers ?? {}) };
    this.keyStore = options.keyStore ?? new MemoryKeyStore();
    this.policy = retryPolicy(options.retry);
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    const onAttempt = options.onAttempt ?? (() => undefined);
    const debug = debugSink(options.debug);
    this.onAttempt = debug
      ? (event) => {
          debug(describeAttempt(event));
          onAttempt(event);
        }
      : onAttempt;
  }

  /**
   * Runs the logical operation `operationId` to a final outcome: resolves with
   * the 2xx (first-hand or replayed), or rejects with an IdempotentRequestError.
   * Calling it again with the same operation id (after a crash, or while it
   * runs) sends the same key, so the operation runs at most once.
   */
  async request<T = unknown>(operationId: string, request: IdempotentRequest): Promise<IdempotentResult<T>> {
    const key = await this.keyFor(operationId, request.keyFrom);
    const method = (request.method ?? 'POST').toUpperCase();
    const url = new URL(request.path.replace(/^\/+/, ''), this.baseUrl);
    const payload = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers = new Headers({ accept: 'application/json, application/problem+json', ...this.headers, ...(request.headers ?? {}) });
    if (payload !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
    headers.set('idempotency-key', key);

    const started = this.policy.now();
    for (let attempt = 1; ; attempt++) {
      const elapsed = this.policy.now() - started;
      const outcome = await this.send(url, method, headers, payload, this.attemptTimeout(elapsed), request.signal);
      if (request.signal?.aborted) {
        throw this.failure('aborted', operationId, key, attempt, outcome, 'the caller aborted', request.signal.reason);
      }
      const decision = decide(outcome, Date.now());
      const status = outcome.kind === 'response' ? outcome.status : undefined;
      const error = outcome.kind === 'no-response' ? outcome.error : undefined;

      if (decision.action === 'done') {
        this.onAttempt({ operationId, key, attempt, status, decision });
        const answer = outcome as Extract<AttemptOutcome, { kind: 'response' }>;
        return {
          status: answer.status,
          body: answer.body as T,
          headers: answer.headers,
          replayed: decision.replayed,
          attempts: attempt,
          key,
        };
      }
      if (decision.action === 'stop') {
        this.onAttempt({ operationId, key, attempt, status, decision });
        throw new IdempotentRequestError({
          kind: 'stopped',
          operationId,
          key,
          attempts: attempt,
          status,
          problem: decision.problem,
          newKeySafe: decision.newKeySafe,
          location: decision.location,
          reason: decision.reason,
        });
      }
      const plan = planRetry(this.policy, attempt, this.policy.now() - started, decision.retryAfterMs);
      if (plan.action === 'give-up') {
        this.onAttempt({ operationId, key, attempt, status, error, decision });
        const why = plan.reason === 'deadline' ? `deadline of ${this.policy.deadlineMs} ms` : `${this.policy.maxAttempts} attempts`;
        throw this.failure('gave-up', operationId, key, attempt, outcome, `${decision.reason}; ${why} reached`, error, decision);
      }
      this.onAttempt({ operationId, key, attempt, status, error, decision, delayMs: plan.delayMs });
      try {
        await this.policy.sleep(plan.delayMs, request.signal);
      } catch (reason) {
        throw this.failure('aborted', operationId, key, attempt, outcome, 'the caller aborted', reason, decision);
      }
    }
  }

  /** The key stored for the operation, if any (never creates one). */
  async storedKey(operationId: string): Promise<string | undefined> {
    return this.keyStore.get(operationId);
  }

  /**
   * Drops the operation's key, once the caller has its final outcome and
   * will not ask again. After this the same operation id gets a new key:
   * never call it while the outcome is unknown (a give-up, an abort).
   */
  async forget(operationId: string): Promise<void> {
    await this.keyStore.delete(operationId);
  }

  /** Gets or creates the operation's key in the store: before the first send, and never anything else after it. */
  private async keyFor(operationId: string, keyFrom: string | readonly string[] | undefined): Promise<string> {
    const wanted = keyFrom === undefined ? undefined : await deriveIdempotencyKey(...(typeof keyFrom === 'string' ? [keyFrom] : keyFrom));
    const key = (await this.keyStore.get(operationId)) ?? (await this.keyStore.put(operationId, wanted ?? randomIdempotencyKey()));
    if (wanted !== undefined && key !== wanted) {
      throw new Error(`operation ${JSON.stringify(operationId)} already has another key stored: keyFrom must not change for one operation`);
    }
    if (!isValidIdempotencyKey(key)) throw new Error(`the key store holds an invalid Idempotency-Key for ${JSON.stringify(operationId)}`);
    return key;
  }

  /** The attempt's timeout: the policy's, but never past the deadline. */
  private attemptTimeout(elapsedMs: number): number {
    return Math.max(1, Math.min(this.policy.attemptTimeoutMs, this.policy.deadlineMs - elapsedMs));
  }

  private async send(
    url: URL,
    method: string,
    headers: Headers,
    payload: string | undefined,
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
  ): Promise<AttemptOutcome> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal === undefined ? timeout : AbortSignal.any([timeout, callerSignal]);
    try {
      const response = await this.fetch(url, { method, headers, body: payload, signal, redirect: 'manual' });
      // The body is part of the answer: a connection that dies while it streams is no answer either.
      const text = await response.text();
      return { kind: 'response', status: response.status, headers: response.headers, body: parseBody(text, response.headers) };
    } catch (error) {
      return { kind: 'no-response', error };
    }
  }

  private failure(
    kind: 'gave-up' | 'aborted',
    operationId: string,
    key: string,
    attempts: number,
    outcome: AttemptOutcome,
    reason: string,
    cause: unknown,
    decision?: Decision,
  ): IdempotentRequestError {
    const problem = decision !== undefined && decision.action !== 'done' ? decision.problem : undefined;
    return new IdempotentRequestError({
      kind,
      operationId,
      key,
      attempts,
      status: outcome.kind === 'response' ? outcome.status : undefined,
      problem,
      // Retried because it may have run: a new key is never known to be safe here.
      newKeySafe: false,
      location: outcome.kind === 'response' ? (outcome.headers.get('location') ?? undefined) : undefined,
      reason,
      cause: outcome.kind === 'no-response' ? (cause ?? outcome.error) : cause,
    });
  }
}

function parseBody(text: string, headers: Headers): unknown {
  if (text === '' || !JSON_TYPE.test(headers.get('content-type') ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
