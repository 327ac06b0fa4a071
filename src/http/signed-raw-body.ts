import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';

const SIGNED_RAW_BODY = 'signedRawBody';

/**
 * A route authenticated by a signature over its exact body (provider
 * webhooks), not by a tenant key: its application/json body reaches the
 * handler as the text received, unparsed (the handler verifies, then
 * parses), and the early 401 for tenant-less requests with a body does not
 * apply to it. Combine with @Public().
 */
export const SignedRawBody = () => RouteConfig({ [SIGNED_RAW_BODY]: true });

export function isSignedRawBodyRoute(request: FastifyRequest): boolean {
  return (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[SIGNED_RAW_BODY] === true;
}
