import { Module } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { appConfig, type AppConfig } from '../config/config.tokens.js';

/** Idempotency keys are logged as a short hash: correlatable, never replayable from logs. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

type LoggedRequest = IncomingMessage & { tenant?: string; idempotency?: { operation: string } };

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.logLevel,
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
            };
          },
          redact: { paths: ['req.headers.authorization', 'req.headers["idempotency-key"]'], remove: true },
          customLogLevel: (_: IncomingMessage, response: ServerResponse, error?: Error) =>
            error || response.statusCode >= 500 ? 'error' : response.statusCode >= 400 ? 'warn' : 'info',
          autoLogging: { ignore: (request: IncomingMessage) => request.url === '/health/live' || request.url === '/metrics' },
        },
      }),
    }),
  ],
})
export class LoggingModule {}
