import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdempotentClient, type AttemptEvent, type IdempotentClientOptions } from './client.js';
import { IdempotentRequestError } from './errors.js';
import { FileKeyStore } from './file-key-store.js';
import { deriveIdempotencyKey } from './idempotency-key.js';
import type { KeyStore } from './key-store.js';
import { MemoryKeyStore } from './memory-key-store.js';

type Reply = Response | Error | ((signal: AbortSignal) => Promise<Response>);

interface Sent {
  url: string;
  method: string;
  key: string | null;
  body: string;
  headers: Headers;
}

/** A fetch that answers from a script and records what each attempt sent. */
function scriptedFetch(replies: Reply[], onSend: (sent: Sent) => void | Promise<void> = () => undefined) {
  const sent: Sent[] = [];
  // The client always passes a URL and a string body.
  const fetch = async (input: URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    const request: Sent = {
      url: input.href,
      method: init?.method ?? 'GET',
      key: headers.get('idempotency-key'),
      body: typeof init?.body === 'string' ? init.body : '',
      headers,
    };
    sent.push(request);
    await onSend(request);
    const reply = replies.shift();
    if (reply === undefined) throw new Error('the script has no more replies');
    if (reply instanceof Error) throw reply;
    if (typeof reply === 'function') return reply(init!.signal!);
    return reply;
  };
  return { fetch: fetch as typeof globalThis.fetch, sent };
}

const reset = () => new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) });
const created = (headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ id: 'ord_1', state: 'saved' }), {
    status: 201,
    headers: { 'content-type': 'application/json; charset=utf-8', location: '/v1/orders/ord_1', ...headers },
  });
const replayed = () => created({ 'idempotent-replayed': 'true' });
const problem = (status: number, code: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: 't', status, detail: 'd', code, ...extra }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

/** A clock that only moves when the client sleeps, and a draw of 0.5. */
function fakeTime() {
  let now = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    retry: {
      now: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
      random: () => 0.5,
      baseDelayMs: 100,
      maxDelayMs: 1_000,
    },
  };
}

const ORDER = {
  customerId: 'cus_1',
  currency: 'USD',
  items: [{ sku: 'sku_1', quantity: 1, unitPriceMinor: 100 }],
  paymentMethod: { token: 'tok_visa' },
};

function clientWith(fetch: typeof globalThis.fetch, options: Partial<IdempotentClientOptions> = {}) {
  const time = fakeTime();
  const events: AttemptEvent[] = [];
  const client = new IdempotentClient({
    baseUrl: 'http://api.test/base',
    headers: { authorization: 'Bearer secret' },
    fetch,
    onAttempt: (event) => events.push(event),
    ...options,
    retry: { ...time.retry, ...options.retry },
  });
  return { client, events, sleeps: time.sleeps };
}

const post = (client: IdempotentClient, operationId = 'op-1', body: unknown = ORDER) =>
  client.request(operationId, { path: '/v1/orders', body });

async function rejection(promise: Promise<unknown>): Promise<IdempotentRequestError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(IdempotentRequestError);
  return error as IdempotentRequestError;
}

describe('IdempotentClient', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('stores the key before the first send, then sends it with the body, the headers, under the base path', async () => {
    const store = new MemoryKeyStore();
    const seenInStore: Array<string | undefined> = [];
    const { fetch, sent } = scriptedFetch([created()], async () => {
      seenInStore.push(await store.get('op-1'));
    });
    const { client } = clientWith(fetch, { keyStore: store });

    const result = await post(client);

    expect(seenInStore).toEqual([result.key]);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ url: 'http://api.test/base/v1/orders', method: 'POST', key: result.key, body: JSON.stringify(ORDER) });
    expect(sent[0].headers.get('authorization')).toBe('Bearer secret');
    expect(sent[0].headers.get('content-type')).toBe('application/json');
    expect(result).toMatchObject({ status: 201, body: { id: 'ord_1', state: 'saved' }, replayed: false, attempts: 1 });
    expect(result.headers.get('location')).toBe('/v1/orders/ord_1');
  });

  it('retries a lost answer, a 409 in use and a 503 with the same key and the same bytes, and reports the replay', async () => {
    const { fetch, sent } = scriptedFetch([
      reset(),
      problem(409, 'idempotency_key_in_use', { 'retry-after': '1' }),
      problem(503, 'payment_provider_unavailable', { 'retry-after': '2' }),
      replayed(),
    ]);
    const { client, sleeps, events } = clientWith(fetch);

    const result = await post(client);

    expect(result).toMatchObject({ status: 201, replayed: true, attempts: 4 });
    expect(sent.map((request) => request.key)).toEqual(Array(4).fill(result.key));
    expect(new Set(sent.map((request) => request.body))).toEqual(new Set([JSON.stringify(ORDER)]));
    // Backoff 50 (half of 100), then Retry-After as a floor over 100 and 200.
    expect(sleeps).toEqual([50, 1_000, 2_000]);
    expect(events.map((event) => [event.attempt, event.status, event.decision.action, event.delayMs])).toEqual([
      [1, undefined, 'retry-same-key', 50],
      [2, 409, 'retry-same-key', 1_000],
      [3, 503, 'retry-same-key', 2_000],
      [4, 201, 'done', undefined],
    ]);
  });

  it('follows the guidance fields over the status', async () => {
    const { fetch, sent } = scriptedFetch([
      problem(400, 'try_again', {}, { retryable: true, reuseKey: true, newKeySafe: false }),
      created(),
    ]);
    const { client } = clientWith(fetch);
    expect(await post(client)).toMatchObject({ status: 201, attempts: 2 });
    expect(sent[0].key).toBe(sent[1].key);

    const stopped = scriptedFetch([problem(503, 'do_not', {}, { retryable: false, reuseKey: true, newKeySafe: false })]);
    const error = await rejection(post(clientWith(stopped.fetch).client));
    expect(error).toMatchObject({ kind: 'stopped', status: 503, code: 'do_not', newKeySafe: false, attempts: 1 });
  });

  it('stops at once on 422 idempotency_key_reused: new-key-safe, the key still stored', async () => {
    const store = new MemoryKeyStore();
    const { fetch, sent } = scriptedFetch([problem(422, 'idempotency_key_reused')]);
    const error = await rejection(post(clientWith(fetch, { keyStore: store }).client));
    expect(error).toMatchObject({ kind: 'stopped', status: 422, code: 'idempotency_key_reused', newKeySafe: true, attempts: 1 });
    expect(error.problem).toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect(sent).toHaveLength(1);
    expect(await store.get('op-1')).toBe(error.key);
  });

  it('stops on 409 idempotency_key_expired: done before, its Location, not new-key-safe', async () => {
    const { fetch } = scriptedFetch([problem(409, 'idempotency_key_expired', { location: '/v1/orders/ord_old' })]);
    const error = await rejection(post(clientWith(fetch).client));
    expect(error).toMatchObject({ kind: 'stopped', alreadyDone: true, location: '/v1/orders/ord_old', newKeySafe: false });
    expect(error.message).toContain('done before, do not repeat');
  });

  it.each([400, 401, 402, 403, 404])('stops at once on %i', async (status) => {
    const { fetch, sent } = scriptedFetch([problem(status, 'nope')]);
    const error = await rejection(post(clientWith(fetch).client));
    expect(error).toMatchObject({ kind: 'stopped', status, newKeySafe: status === 400 });
    expect(sent).toHaveLength(1);
  });

  it('gives up after maxAttempts with the last problem, never new-key-safe, the key kept', async () => {
    const store = new MemoryKeyStore();
    const { fetch, sent } = scriptedFetch(Array.from({ length: 3 }, () => problem(503, 'payment_provider_unavailable')));
    const error = await rejection(post(clientWith(fetch, { keyStore: store, retry: { maxAttempts: 3 } }).client));
    expect(error).toMatchObject({ kind: 'gave-up', attempts: 3, status: 503, code: 'payment_provider_unavailable', newKeySafe: false });
    expect(error.message).toContain('3 attempts reached');
    expect(new Set(sent.map((request) => request.key))).toEqual(new Set([error.key]));
    expect(await store.get('op-1')).toBe(error.key);
  });

  it('gives up without waiting when Retry-After would end past the deadline', async () => {
    const { fetch } = scriptedFetch([problem(429, 'rate_limited', { 'retry-after': '120' })]);
    const { client, sleeps } = clientWith(fetch, { retry: { deadlineMs: 30_000 } });
    const error = await rejection(post(client));
    expect(error).toMatchObject({ kind: 'gave-up', attempts: 1, status: 429 });
    expect(error.message).toContain('deadline of 30000 ms reached');
    expect(sleeps).toEqual([]);
  });

  it('a network error that ends the run is the cause of the give-up', async () => {
    const { fetch } = scriptedFetch([reset(), reset()]);
    const error = await rejection(post(clientWith(fetch, { retry: { maxAttempts: 2 } }).client));
    expect(error).toMatchObject({ kind: 'gave-up', status: undefined, newKeySafe: false });
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it('times out an attempt that hangs (no answer) and retries it with the same key', async () => {
    const hang = (signal: AbortSignal) =>
      new Promise<Response>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
    const { fetch, sent } = scriptedFetch([hang, replayed()]);
    const { client, events } = clientWith(fetch, { retry: { attemptTimeoutMs: 50 } });
    expect(await post(client)).toMatchObject({ replayed: true, attempts: 2 });
    expect(events[0].decision).toMatchObject({ action: 'retry-same-key', reason: expect.stringContaining('TimeoutError') });
    expect(sent[0].key).toBe(sent[1].key);
  });

  it("the caller's abort stops it, the key kept for a later resume", async () => {
    const controller = new AbortController();
    const { fetch } = scriptedFetch([problem(503, 'x')]);
    const client = new IdempotentClient({
      baseUrl: 'http://api.test',
      fetch,
      retry: {
        sleep: (_ms, signal) =>
          new Promise((_, reject) => {
            signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
            controller.abort(new Error('user pressed stop'));
          }),
      },
    });
    const error = await rejection(client.request('op', { path: '/v1/orders', body: ORDER, signal: controller.signal }));
    expect(error).toMatchObject({ kind: 'aborted', attempts: 1, newKeySafe: false });
    expect(await client.storedKey('op')).toBe(error.key);
  });

  it('a new client on the same FileKeyStore (a restarted process) resumes with the same key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'idempotent-client-restart-'));
    dirs.push(dir);
    const first = scriptedFetch([reset(), reset()]);
    const crashed = await rejection(post(clientWith(first.fetch, { keyStore: new FileKeyStore(dir), retry: { maxAttempts: 2 } }).client));

    const second = scriptedFetch([replayed()]);
    const result = await post(clientWith(second.fetch, { keyStore: new FileKeyStore(dir) }).client);

    expect(result).toMatchObject({ replayed: true, key: crashed.key });
    expect([...first.sent, ...second.sent].map((request) => request.key)).toEqual(Array(3).fill(crashed.key));
  });

  it('derives the key from the caller ids when asked, and refuses another derivation for the same operation', async () => {
    const { fetch, sent } = scriptedFetch([created(), created()]);
    const { client } = clientWith(fetch);
    const result = await client.request('conv_1/call_1', { path: '/v1/orders', body: ORDER, keyFrom: ['conv_1', 'call_1'] });
    expect(result.key).toBe(await deriveIdempotencyKey('conv_1', 'call_1'));
    expect(sent[0].key).toBe(result.key);
    await expect(client.request('conv_1/call_1', { path: '/v1/orders', body: ORDER, keyFrom: ['conv_1', 'call_2'] })).rejects.toThrow(
      'already has another key stored',
    );
    expect(sent).toHaveLength(1);
  });

  it('concurrent requests for one operation share one key', async () => {
    const { fetch, sent } = scriptedFetch([created(), replayed(), replayed()]);
    const { client } = clientWith(fetch);
    const results = await Promise.all([post(client), post(client), post(client)]);
    expect(new Set([...results.map((result) => result.key), ...sent.map((request) => request.key)]).size).toBe(1);
  });

  it('keeps the key after the outcome until told to forget it; then the operation id gets a new key', async () => {
    const store = new MemoryKeyStore();
    const { fetch, sent } = scriptedFetch([created(), replayed(), created()]);
    const { client } = clientWith(fetch, { keyStore: store });
    const first = await post(client);
    expect(await post(client)).toMatchObject({ key: first.key, replayed: true });
    await client.forget('op-1');
    expect(await client.storedKey('op-1')).toBeUndefined();
    const again = await post(client);
    expect(again.key).not.toBe(first.key);
    expect(sent.map((request) => request.key)).toEqual([first.key, first.key, again.key]);
  });

  it('refuses a store that holds an invalid key, and never lets a request header replace the key', async () => {
    const broken: KeyStore = { get: async () => 'bad\nkey', put: async (_id, key) => key, delete: async () => undefined };
    const { fetch, sent } = scriptedFetch([created()]);
    await expect(post(clientWith(fetch, { keyStore: broken }).client)).rejects.toThrow('invalid Idempotency-Key');
    expect(sent).toHaveLength(0);

    const { client } = clientWith(fetch);
    const result = await client.request('op', { path: '/v1/orders', body: ORDER, headers: { 'Idempotency-Key': 'mine' } });
    expect(sent[0].key).toBe(result.key);
    expect(result.key).not.toBe('mine');
  });

  it('returns a text body as text, and a body without content as an empty string', async () => {
    const { fetch } = scriptedFetch([
      new Response('plain', { status: 200, headers: { 'content-type': 'text/plain' } }),
      new Response(null, { status: 204 }),
    ]);
    const { client } = clientWith(fetch);
    expect(await client.request('a', { path: '/x' })).toMatchObject({ status: 200, body: 'plain' });
    expect(await client.request('b', { path: '/x', method: 'put' })).toMatchObject({ status: 204, body: '' });
  });

  describe('debug logging (opt-in)', () => {
    const retried = () => [
      reset(),
      problem(503, 'payment_provider_unavailable', { 'retry-after': '2' }, { retryable: true, reuseKey: true, newKeySafe: false }),
      replayed(),
    ];

    it('writes one line per attempt, with what came back and what the client does next', async () => {
      const lines: string[] = [];
      const { client } = clientWith(scriptedFetch(retried()).fetch, { debug: (line) => lines.push(line) });
      const result = await post(client);
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(
        new RegExp(`^idempotent-client op-1 key=${result.key} attempt 1: no answer \\(fetch failed\\) -> retry same key in \\d+ ms`),
      );
      expect(lines[1]).toMatch(/attempt 2: 503 payment_provider_unavailable -> retry same key in 2000 ms \(guidance: /);
      expect(lines[2]).toBe(`idempotent-client op-1 key=${result.key} attempt 3: 201 -> done (replayed: it had run before)`);
    });

    it('is off by default and with debug: false, even with NODE_DEBUG set', async () => {
      const lines: string[] = [];
      const spy = jest.spyOn(console, 'error').mockImplementation((line: string) => void lines.push(line));
      const previous = process.env.NODE_DEBUG;
      try {
        await post(clientWith(scriptedFetch(retried()).fetch).client);
        expect(lines).toEqual([]);
        process.env.NODE_DEBUG = 'http,idempotent-client';
        await post(clientWith(scriptedFetch(retried()).fetch, { debug: false }).client);
        expect(lines).toEqual([]);
        // Unset, NODE_DEBUG=idempotent-client turns it on, to stderr.
        await post(clientWith(scriptedFetch(retried()).fetch).client, 'op-2');
        expect(lines).toHaveLength(3);
        expect(lines[2]).toMatch(/^idempotent-client op-2 key=.* attempt 3: 201 -> done/);
      } finally {
        if (previous === undefined) delete process.env.NODE_DEBUG;
        else process.env.NODE_DEBUG = previous;
        spy.mockRestore();
      }
    });

    it('still calls onAttempt beside the debug lines', async () => {
      const { client, events } = clientWith(scriptedFetch(retried()).fetch, { debug: () => undefined });
      await post(client);
      expect(events.map((event) => event.attempt)).toEqual([1, 2, 3]);
    });

    it('names a stop and whether a new key is safe', async () => {
      const lines: string[] = [];
      const { client } = clientWith(
        scriptedFetch([problem(402, 'card_declined', {}, { retryable: false, reuseKey: false, newKeySafe: false })]).fetch,
        {
          debug: (line) => lines.push(line),
        },
      );
      await rejection(post(client));
      expect(lines).toEqual([expect.stringMatching(/attempt 1: 402 card_declined -> stop \(guidance: .*; new key safe: false\)$/)]);
    });
  });
});
