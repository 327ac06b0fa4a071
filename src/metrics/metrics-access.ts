import { createHash, timingSafeEqual } from 'node:crypto';
import { bearerSecret } from '../auth/api-key.registry.js';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** METRICS_TOKEN, when set, as `Authorization: Bearer <token>` (compared as digests, in constant time). */
export function metricsTokenAccepted(token: string | undefined, authorization: string | undefined): boolean {
  if (token === undefined) return true;
  const presented = bearerSecret(authorization);
  return presented !== undefined && timingSafeEqual(digest(presented), digest(token));
}
