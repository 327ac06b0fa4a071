import type { FastifyInstance } from 'fastify';
import type { HttpSettings } from '../config/configuration.js';

/** How often Node checks its header and request timeouts (connectionsCheckingInterval): often enough for them to hold. */
export function connectionsCheckingInterval(http: HttpSettings): number {
  return Math.min(1000, Math.ceil(http.headersTimeoutMs / 4));
}

/**
 * A hard bound on the body of every request, owned by us. Node enforces
 * HTTP_REQUEST_TIMEOUT_MS from a list of connections ordered by the time
 * their request began; a parser missing from that list (a key the ordered set
 * could not hold, or lost on a later erase) is never checked again, and the
 * review saw a stalled body survive 75 s after a flood. So each request that
 * is still receiving its body when its headers arrive gets a timer; it is
 * cleared when the body ends or the request closes, and past
 * requestTimeout + one checking interval (after the headers, so never before
 * Node's own cut would have come) the connection is handed to the same
 * clientError path as Node's timeout: 408 problem+json, connection closed.
 * A handler's own time is never counted: the timer ends with the body.
 */
export function enforceRequestDeadline(fastify: FastifyInstance, http: HttpSettings): void {
  const budgetMs = http.requestTimeoutMs + connectionsCheckingInterval(http);
  fastify.addHook('onRequest', (request, _reply, done) => {
    const raw = request.raw;
    if (raw.complete) return done();
    const timer = setTimeout(() => {
      if (raw.complete || raw.socket.destroyed) return;
      const error: NodeJS.ErrnoException = new Error('request body not received in time');
      error.code = 'ERR_HTTP_REQUEST_TIMEOUT';
      fastify.server.emit('clientError', error, raw.socket);
    }, budgetMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    raw.once('end', clear);
    raw.once('close', clear);
    done();
  });
}
