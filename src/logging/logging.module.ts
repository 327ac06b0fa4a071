import { Module } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { destination } from 'pino';
import type { Options } from 'pino-http';
import { appConfig, idempotencyConfig, type AppConfig, type IdempotencyConfig } from '../config/config.tokens.js';
import { logDigest, logDigestKey } from './log-digest.js';
import { RefusalLogSampler } from './refusal-log-sampler.js';
import { CLIENT_REQUEST_ID, REPLAYED, ROUTE_PATTERN } from './route-pattern.js';

/** Log lines are written in batches of about this size, or sooner (LOG_FLUSH_MS). */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 200;
/** Lines queued for a stdout that does not keep up, at most; beyond it they are dropped and counted. */
const LOG_QUEUE_MAX_BYTES = 16 * 1024 * 1024;

type LoggedRequest = IncomingMessage & {
  tenant?: string;
  apiKeyId?: string;
  idempotency?: { operation: string };
  [ROUTE_PATTERN]?: string;
  [CLIENT_REQUEST_ID]?: string;
  [REPLAYED]?: true;
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
        const options = {
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
            // Nothing on the way in: pino-http then skips a child logger per request that would bind nothing.
            if (!response.headersSent) return undefined as unknown as Record<string, never>;
            const raw = request as LoggedRequest;
            const key = request.headers['idempotency-key'];
            return {
              route: raw[ROUTE_PATTERN] ?? 'unmatched',
              clientRequestId: raw[CLIENT_REQUEST_ID],
              tenant: raw.tenant,
              apiKeyId: raw.apiKeyId,
              operation: raw.idempotency?.operation,
              idempotencyKeyHash: typeof key === 'string' ? logDigest(digestKey, raw.tenant, key) : undefined,
              // Not response.getHeader(): Fastify hands its headers to writeHead, where getHeader never sees them.
              replayed: raw[REPLAYED],
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
        } satisfies Options;
        if (options.transport) return { pinoHttp: options };
        // JSON lines to stdout without blocking: a synchronous write per line was a syscall inside every request
        // (~8% of a read's CPU in the bench's profile), and an asynchronous write per line still cost most of it
        // (a request to the thread pool per line). Lines are buffered up to 4 KiB, written asynchronously, and
        // flushed at least every LOG_FLUSH_MS, so a quiet service's lines still show within a fraction of a second;
        // pino flushes what is buffered when the process exits (process.exit and a fatal error included).
        // A SIGKILL loses at most that buffer.
        // Bounded: a synchronous write used to stall the process when nothing read stdout; now lines queue in
        // memory, so past LOG_QUEUE_MAX_BYTES they are dropped - and the drop is said on stderr, once a second.
        const stream = destination({
          dest: 1,
          sync: false,
          minLength: LOG_BUFFER_BYTES,
          maxLength: LOG_QUEUE_MAX_BYTES,
          periodicFlush: LOG_FLUSH_MS,
        });
        let dropped = 0;
        stream.on('drop', () => {
          if (dropped++ === 0) {
            setTimeout(() => {
              process.stderr.write(`log: stdout is not keeping up; ${dropped} line(s) dropped in the last second\n`);
              dropped = 0;
            }, 1_000).unref();
          }
        });
        return { pinoHttp: [options, stream] };
      },
    }),
  ],
})
export class LoggingModule {}
