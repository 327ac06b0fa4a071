import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';

/** Request state lives on the raw Node request, where the request logger sees it too. */
export interface RequestState {
  tenant?: string;
  /** Which of the tenant's API keys (`acme#2`), never the secret. */
  apiKeyId?: string;
}

export function requestState(request: FastifyRequest): RequestState {
  return request.raw as IncomingMessage & RequestState;
}

/** The tenant the API key guard resolved; every tenant read takes it as a required argument. */
export const Tenant = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const tenant = requestState(context.switchToHttp().getRequest<FastifyRequest>()).tenant;
  if (!tenant) throw new Error('Tenant() used on a route without authentication');
  return tenant;
});
