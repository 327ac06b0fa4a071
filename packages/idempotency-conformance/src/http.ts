// The kit's only way to reach a deployment: plain HTTP(S) with node:http, one
// fresh connection per request (agent: false). A pool could retry a request
// on a dead connection behind our back, and a lost-response test must know
// exactly which request was sent how many times.
import http from 'node:http';
import https from 'node:https';

/** An answer as received: lower-case header names, repeated fields joined with ", ". */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** No answer at all: refused, reset, timed out. */
export interface NoAnswer {
  error: string;
}

export type Reply = Answer | NoAnswer;

export const isAnswer = (reply: Reply | null | undefined): reply is Answer => !!reply && 'status' in reply;

export interface KitRequest {
  method: 'GET' | 'POST';
  /** Path below the base URL, e.g. /v1/orders. */
  path: string;
  /** An array value sends the field once per element (a key sent twice). */
  headers?: Record<string, string | string[]>;
  body?: string;
  /** Send to this origin (the kit's lossy proxy) instead of the base URL's. */
  via?: string;
}

/** A GET the kit refused to send: the URL is not on the base URL's origin (its token would go there). */
export class ForeignOriginError extends Error {
  constructor(url: URL, base: URL) {
    super(`${url.origin} is not the base URL's origin ${base.origin}: not followed (the token is sent to the base URL's origin only)`);
  }
}

export class KitHttp {
  private sent = 0;
  private readonly base: URL;

  constructor(
    baseUrl: string,
    private readonly timeoutMs: number,
    /** A hard ceiling on requests per run: the kit is used on shared environments. */
    private readonly maxRequests: number,
  ) {
    this.base = new URL(baseUrl);
  }

  get requestCount(): number {
    return this.sent;
  }

  /** The base URL's path prefix plus `path`: a deployment may live under /api. */
  fullPath(path: string): string {
    return this.base.pathname.replace(/\/+$/, '') + path;
  }

  /** Where a Location header points, resolved as a browser would. */
  resolve(location: string): URL {
    return new URL(location, this.base);
  }

  /**
   * Whether a URL is on the base URL's origin: same scheme, host and port.
   * Only there does the kit send its token (SEC4-02): a Location naming
   * another host, or the same host over plain http://, is never followed.
   */
  sameOrigin(url: URL): boolean {
    return url.origin === this.base.origin;
  }

  send(request: KitRequest): Promise<Reply> {
    this.spend();
    const url = new URL(this.fullPath(request.path), request.via ?? this.base.origin);
    const headers: Record<string, string | string[]> = { ...(request.headers ?? {}) };
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(request.body));
    }
    return exchange(url, request.method, headers, request.body, this.timeoutMs);
  }

  /** GET of an absolute URL (a Location) on the base URL's origin only, same connection rules and budget. */
  get(url: URL, headers: Record<string, string>): Promise<Reply> {
    if (!this.sameOrigin(url)) throw new ForeignOriginError(url, this.base);
    this.spend();
    return exchange(url, 'GET', headers, undefined, this.timeoutMs);
  }

  private spend(): void {
    if (++this.sent > this.maxRequests) throw new Error(`request budget of ${this.maxRequests} exhausted: refusing to send more`);
  }
}

function exchange(
  url: URL,
  method: string,
  headers: Record<string, string | string[]>,
  body: string | undefined,
  timeoutMs: number,
): Promise<Reply> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    const request = client.request(url, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', (error) => resolve({ error: describeError(error) }));
      response.on('aborted', () => resolve({ error: 'answer cut off mid-body' }));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: flatHeaders(response.headers), body: Buffer.concat(chunks) }),
      );
    });
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', (error) => resolve({ error: describeError(error) }));
    request.end(body);
  });
}

export function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function describeError(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `${code}: ${error.message}` : error.message;
}
