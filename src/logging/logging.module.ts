import { Module } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { appConfig, idempotencyConfig, type AppConfig, type IdempotencyConfig } from '../config/config.tokens.js';
import { logDigest, logDigestKey } from './log-digest.js';
import { RefusalLogSampler } from './refusal-log-sampler.js';
import { CLIENT_REQUEST_ID, ROUTE_PATTERN } from './route-pattern.js';

type LoggedRequest = IncomingMessage & {
  tenant?: string;
  apiKeyId?: string;
  idempotency?: { operation: string };
  [ROUTE_PATTERN]?: string;
  [CLIENT_REQUEST_ID]?: string;
};

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [appConfig.KEY, idempotencyConfig.KEY],
      useFactory: (config: AppConfig, idempotency: IdempotencyConfig) => {
        // A subkey of PRIVACY_DIGEST_KEY (required wherever there is a real store): log digests never equal the stored ones.
        const digestKey = logDigestKey(idempotency.digestKey);
        const refusals = new RefusalLogSampler(config.logRefusedPerSecond);
        const skippedBefore = new WeakMap<ServerResponse, number>();
        return {
          pinoHttp: {
            level: config.logLevel,
            // pino-pretty renders the same records for a person (in a worker thread: the request path stays JSON-cheap).
            transport:
              config.logFormat === 'pretty'
                ? { target: 'pino-pretty', options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l' } }
                : undefined,
            // Never log secrets, card tokens, raw keys, the URL (customer ids, keys in paths) or its query string:
            // requests are summarised by route pattern (`/v1/customers/:customerId/data`), not dumped.
            serializers: {
              // Bound when the request starts, before any route is matched: the route pattern comes with customProps.
              req: (request: { id: string; method: string }) => ({ id: request.id, method: request.method }),
              res: (response: { statusCode: number }) => ({ statusCode: response.statusCode }),
            },
            customProps: (request: IncomingMessage, response: ServerResponse) => {
              // pino-http asks on the way in and on the way out; only the way out knows the tenant and operation.
              if (!response.headersSent) return {};
              const raw = request as LoggedRequest;
              const key = request.headers['idempotency-key'];
              return {
                route: raw[ROUTE_PATTERN] ?? 'unmatched',
                clientRequestId: raw[CLIENT_REQUEST_ID],
                tenant: raw.tenant,
                apiKeyId: raw.apiKeyId,
                operation: raw.idempotency?.operation,
                idempotencyKeyHash: typeof key === 'string' ? logDigest(digestKey, raw.tenant, key) : undefined,
                replayed: response.getHeader('idempotent-replayed') === 'true' || undefined,
                refusalsNotLogged: skippedBefore.get(response),
              };
            },
            redact: { paths: ['req.headers.authorization', 'req.headers["idempotency-key"]'], remove: true },
            // A 4xx is the client's doing (or an attacker's), not ours: info, and sampled (RefusalLogSampler).
            customLogLevel: (_: IncomingMessage, response: ServerResponse, error?: Error) => {
              if (error || response.statusCode >= 500) return 'error';
              if (response.statusCode < 400) return 'info';
              const decision = refusals.admit();
              if (!decision.log) return 'silent';
              if (decision.skippedBefore > 0) skippedBefore.set(response, decision.skippedBefore);
              return 'info';
            },
            autoLogging: {
              // Asked before any route is matched: the path alone (no query) is compared, never logged.
              ignore: (request: IncomingMessage) => {
                const path = (request.url ?? '').split('?')[0];
                return path === '/health/live' || path === '/metrics';
              },
            },
          },
        };
      },
    }),
  ],
})
export class LoggingModule {}
