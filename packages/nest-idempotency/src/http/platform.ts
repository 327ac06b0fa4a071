import type { IncomingMessage } from 'node:http';

/**
 * What the package reads of a request, on either of Nest's HTTP adapters:
 * Express hands handlers the Node request itself (extended), Fastify a
 * wrapper whose `raw` is the Node request. Structural on purpose: the package
 * imports neither `express` nor `fastify`, so an app installs only the one it
 * runs on.
 */
export interface IdempotentHttpRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body?: unknown;
  /** The path parameters the router resolved (both adapters). */
  params?: unknown;
  /** Fastify: the Node request. */
  raw?: IncomingMessage;
  /** Express: the URL before any router rewrote `url`. */
  originalUrl?: string;
}

/**
 * What the package writes to a response: the methods Express's `Response`
 * and Fastify's `FastifyReply` share (`status`, `header`, `send`).
 */
export interface IdempotentHttpResponse {
  status(code: number): unknown;
  header(name: string, value: string): unknown;
  send(body?: unknown): unknown;
  /** The status set so far (Nest sets the route's before the handler runs): both adapters have it. */
  statusCode?: number;
  /** A header set so far (`@Header()`, or the handler's `@Res({ passthrough: true })`): both adapters have it. */
  getHeader?(name: string): unknown;
}

/** The Node request under either adapter's request object. */
export function nodeRequest(request: IdempotentHttpRequest): IncomingMessage {
  return request.raw ?? (request as unknown as IncomingMessage);
}

/**
 * The resource the request names: its path as the client sent it, without
 * the query string (Express may have rewritten `url` under a mounted router;
 * `originalUrl` is the client's).
 */
export function requestPath(request: IdempotentHttpRequest): string {
  const url = request.originalUrl ?? request.raw?.url ?? request.url;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The route's template (`/payments/:id/capture`): Fastify's `routeOptions.url`, Express's `route.path`. */
export function routeTemplate(request: IdempotentHttpRequest): string {
  const adapted = request as { routeOptions?: { url?: string }; route?: { path?: unknown } };
  const template = adapted.routeOptions?.url ?? adapted.route?.path;
  return typeof template === 'string' ? template : requestPath(request);
}

/** The path parameters the router resolved, as strings (both adapters decode them); none when the route has none. */
export function routeParams(request: IdempotentHttpRequest): Record<string, string> | undefined {
  const params = request.params;
  if (params === null || typeof params !== 'object') return undefined;
  const entries = Object.entries(params).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}
