import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Problem, problem, PROBLEM_CONTENT_TYPE, retryAfterHeader } from '@idempotent-orders/nest-idempotency';
// The app's guidance table, registered before any of these refusals is written.

/** Max length of one path parameter: a 255-character key, every character percent-encoded. */
export const MAX_PARAM_LENGTH = 3 * 255;

type Refusal = [status: number, code: string, detail: string];

/** Why Node's HTTP parser gave up on a connection; also the label of http_client_errors_total. */
export function clientErrorReason(error: NodeJS.ErrnoException): 'timeout' | 'headers_too_large' | 'reset' | 'malformed' {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'timeout';
  if (error.code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  if (error.code === 'ECONNRESET') return 'reset';
  return 'malformed';
}

export const CLIENT_ERRORS: Record<'timeout' | 'headers_too_large' | 'malformed', Refusal> = {
  timeout: [408, 'request_timeout', 'The request was not received in time.'],
  headers_too_large: [431, 'headers_too_large', 'The request headers are too large.'],
  malformed: [400, 'malformed_request', 'The request could not be parsed.'],
};

/**
 * Fastify's `clientErrorHandler`: what Node's parser refuses (framing errors,
 * oversized headers, the header and request timeouts) never becomes a
 * request, so it is answered on the socket - as problem+json, like every
 * other error - and the connection is closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const reason = clientErrorReason(error);
  if (reason === 'reset' || socket.destroyed) return;
  // A response already under way on this socket cannot be followed by another one.
  const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inProgress?.headersSent) {
    const [status, code, detail] = CLIENT_ERRORS[reason];
    socket.write(rawResponse(problem(status, code, detail)));
  }
  socket.destroy();
}

/** What the router refuses, by Fastify error code (`other`: anything else it gives up on). */
export const ROUTER_REFUSALS: Record<string, Refusal> = {
  FST_ERR_MAX_PARAM_LENGTH: [414, 'uri_too_long', `A path segment is longer than ${MAX_PARAM_LENGTH} characters.`],
  FST_ERR_BAD_URL: [400, 'malformed_url', 'The URL is not valid (check its percent-encoding).'],
  other: [400, 'malformed_request', 'The request could not be routed.'],
};

/**
 * Fastify's `frameworkErrors`: the router refuses a malformed URL or an
 * over-long path parameter before any hook runs. (It replaces Nest's default,
 * which only exists to run Nest's opt-in security headers, unused here.)
 * The URL is not echoed.
 */
export function answerFrameworkError(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
  const [status, code, detail]: Refusal = ROUTER_REFUSALS[error.code ?? ''] ?? ROUTER_REFUSALS.other;
  void reply
    .status(status)
    .header('x-request-id', request.id)
    .headers(retryAfterHeader(status, code))
    .type(PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(problem(status, code, detail)));
}

function rawResponse(body: Problem): string {
  const json = JSON.stringify(body);
  const retryAfter = retryAfterHeader(body.status, body.code)['retry-after'];
  return (
    `HTTP/1.1 ${body.status} ${body.title}\r\n` +
    `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
    (retryAfter ? `Retry-After: ${retryAfter}\r\n` : '') +
    `Content-Length: ${Buffer.byteLength(json)}\r\n` +
    'Connection: close\r\n\r\n' +
    json
  );
}
