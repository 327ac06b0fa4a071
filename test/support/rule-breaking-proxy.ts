// "A copy of the service with one rule broken", without touching the
// service: an HTTP proxy in front of the real process that breaks exactly one
// rule of the idempotency contract on the wire. The conformance kit, pointed
// at the proxy, must FAIL the rows of that rule and only those.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface ProxiedAnswer {
  status: number;
  headers: http.OutgoingHttpHeaders;
  body: Buffer;
}

export interface BrokenRule {
  /** Change the request before it is forwarded. */
  request?(request: ProxiedRequest): ProxiedRequest;
  /** Answer from the proxy's own memory instead of forwarding (null: forward). */
  stored?(request: ProxiedRequest): ProxiedAnswer | null;
  /** Change the answer before the client gets it. */
  answer?(request: ProxiedRequest, answer: ProxiedAnswer): ProxiedAnswer;
}

export interface RuleBreakingProxy {
  readonly baseUrl: string;
  close(): Promise<void>;
}

/** The replay is sent without `Idempotent-Replayed: true`. */
export function stripReplayedHeader(): BrokenRule {
  return {
    answer: (_request, answer) => {
      const headers = { ...answer.headers };
      delete headers['idempotent-replayed'];
      return { ...answer, headers };
    },
  };
}

/** A 5xx is stored like a final answer and replayed to the retry (the contract says: never stored). */
export function storeServerErrors(): BrokenRule {
  const answers = new Map<string, ProxiedAnswer>();
  const keyOf = (request: ProxiedRequest) =>
    request.headers['idempotency-key'] === undefined
      ? null
      : `${request.headers.authorization}|${String(request.headers['idempotency-key'])}|${request.body.toString('utf8')}`;
  return {
    stored: (request) => {
      const stored = answers.get(keyOf(request) ?? '');
      return stored ? { ...stored, headers: { ...stored.headers, 'idempotent-replayed': 'true' } } : null;
    },
    answer: (request, answer) => {
      const key = keyOf(request);
      if (key !== null && answer.status >= 500) answers.set(key, answer);
      return answer;
    },
  };
}

/** Keys not scoped per tenant: tenant B's requests reach the service as tenant A's. */
export function ignoreTenant(secretOfB: string, secretOfA: string): BrokenRule {
  return {
    request: (request) =>
      request.headers.authorization === `Bearer ${secretOfB}`
        ? { ...request, headers: { ...request.headers, authorization: `Bearer ${secretOfA}` } }
        : request,
  };
}

export async function startRuleBreakingProxy(target: string, rule: BrokenRule): Promise<RuleBreakingProxy> {
  const server = http.createServer((incoming, outgoing) => {
    // The kit's own lossy proxy resets connections on purpose; that must not crash the test process.
    incoming.on('error', () => undefined);
    outgoing.on('error', () => undefined);
    void readRequest(incoming)
      .then(async (original) => {
        const request = rule.request ? rule.request(original) : original;
        const answer = rule.stored?.(request) ?? (await forward(target, request));
        const final = rule.answer ? rule.answer(request, answer) : answer;
        outgoing.writeHead(final.status, { ...final.headers, 'content-length': String(final.body.length) });
        outgoing.end(final.body);
      })
      .catch(() => outgoing.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function readRequest(incoming: http.IncomingMessage): Promise<ProxiedRequest> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    // A repeated Idempotency-Key stays two fields (Node would join them): the service must see what the client sent.
    const keys = incoming.headersDistinct['idempotency-key'];
    const headers = keys ? { ...incoming.headers, 'idempotency-key': keys } : incoming.headers;
    incoming.on('end', () => resolve({ method: incoming.method ?? 'GET', url: incoming.url ?? '/', headers, body: Buffer.concat(chunks) }));
    incoming.on('error', reject);
  });
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host'];

function forward(target: string, request: ProxiedRequest): Promise<ProxiedAnswer> {
  const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
  const url = new URL(request.url, target);
  return new Promise((resolve, reject) => {
    const upstream = http.request(
      url,
      { method: request.method, headers: { ...headers, 'content-length': String(request.body.length) }, agent: false },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('error', reject);
        answer.on('end', () => {
          const kept = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
          resolve({ status: answer.statusCode ?? 502, headers: kept, body: Buffer.concat(chunks) });
        });
      },
    );
    upstream.setTimeout(15_000, () => upstream.destroy(new Error('no answer from the service')));
    upstream.on('error', reject);
    upstream.end(request.body);
  });
}
