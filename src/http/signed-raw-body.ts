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
export const SignedRawBody = (scheme: SignatureScheme = 'standard-webhooks') =>
  RouteConfig({ [SIGNED_RAW_BODY]: true, [SIGNATURE_SCHEME]: scheme });

/** Whose signature headers the route carries: Standard Webhooks (webhook-id/-timestamp/-signature) or Stripe's (Stripe-Signature). */
export type SignatureScheme = 'standard-webhooks' | 'stripe';
const SIGNATURE_SCHEME = 'signatureScheme';

export function isSignedRawBodyRoute(request: FastifyRequest): boolean {
  return (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[SIGNED_RAW_BODY] === true;
}

export function signatureSchemeOf(request: FastifyRequest): SignatureScheme {
  const scheme = (request.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[SIGNATURE_SCHEME];
  return scheme === 'stripe' ? 'stripe' : 'standard-webhooks';
}
