import { Module } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { appConfig, type AppConfig } from '../config/config.tokens.js';
import { RefusalLogSampler } from './refusal-log-sampler.js';

/** Idempotency keys are logged as a short hash: correlatable, never replayable from logs. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

type LoggedRequest = IncomingMessage & { tenant?: string; idempotency?: { operation: string } };

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (config: AppConfig) => {
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
            // Never log secrets, card tokens or raw keys: requests are summarised, not dumped.
            serializers: {
              req: (request: { id: string; method: string; url: string }) => ({ id: request.id, method: request.method, url: request.url }),
              res: (response: { statusCode: number }) => ({ statusCode: response.statusCode }),
            },
            customProps: (request: IncomingMessage, response: ServerResponse) => {
              // pino-http asks on the way in and on the way out; only the way out knows the tenant and operation.
              if (!response.headersSent) return {};
              const raw = request as LoggedRequest;
              const key = request.headers['idempotency-key'];
              return {
                tenant: raw.tenant,
                operation: raw.idempotency?.operation,
                idempotencyKeyHash: typeof key === 'string' ? hashKey(key) : undefined,
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
            autoLogging: { ignore: (request: IncomingMessage) => request.url === '/health/live' || request.url === '/metrics' },
          },
        };
      },
    }),
  ],
})
export class LoggingModule {}
