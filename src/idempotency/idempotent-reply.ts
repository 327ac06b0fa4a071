import type { FastifyReply } from 'fastify';
import type { IdempotentResult } from './idempotency.service.js';

/** Headers kept with a stored response and sent again on replay; nothing else is stored. */
export const REPLAYED_HEADERS = ['content-type', 'location'];

/** Writes an idempotent result: the original status, headers and bytes, plus the key's metadata. */
export function sendIdempotentResult(reply: FastifyReply, result: IdempotentResult): void {
  const { response } = result;
  reply.status(response.status);
  for (const name of REPLAYED_HEADERS) {
    if (response.headers[name]) reply.header(name, response.headers[name]);
  }
  if (result.replayed) reply.header('idempotent-replayed', 'true');
  reply.header('idempotency-expires', result.keyExpiresAt.toUTCString());
  reply.send(response.body);
}
