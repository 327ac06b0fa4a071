import { Module } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import { destination, stdSerializers } from 'pino';
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

/** The fields of a request's line that only its end knows. */
function requestFields(
  request: LoggedRequest,
  response: ServerResponse,
  digestKey: Buffer,
  skippedBefore: WeakMap<ServerResponse, number>,
) {
  const key = request.headers['idempotency-key'];
  return {
    route: request[ROUTE_PATTERN] ?? 'unmatched',
    clientRequestId: request[CLIENT_REQUEST_ID],
    tenant: request.tenant,
    apiKeyId: request.apiKeyId,
    operation: request.idempotency?.operation,
    idempotencyKeyHash: typeof key === 'string' ? logDigest(digestKey, request.tenant, key) : undefined,
    // Not response.getHeader(): Fastify hands its headers to writeHead, where getHeader never sees them.
    replayed: request[REPLAYED],
    refusalsNotLogged: skippedBefore.get(response),
  };
}

/**
 * The request log's pino-http options: one line per request, summarised by
 * route pattern, with what only its end knows; refusals sampled. Apart from
 * the module for its spec, which reads the lines of a real server.
 */
export function requestLogOptions(
  config: Pick<AppConfig, 'logLevel' | 'logFormat' | 'logRefusedPerSecond'>,
  idempotency: Pick<IdempotencyConfig, 'digestKey'>,
) {
  // A subkey of PRIVACY_DIGEST_KEY (required wherever there is a real store): log digests never equal the stored ones.
  const digestKey = logDigestKey(idempotency.digestKey);
  const refusals = new RefusalLogSampler(config.logRefusedPerSecond);
  const skippedBefore = new WeakMap<ServerResponse, number>();
  return {
    level: config.logLevel,
    // pino-pretty renders the same records for a person (in a worker thread: the request path stays JSON-cheap).
    transport:
      config.logFormat === 'pretty' ? { target: 'pino-pretty', options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l' } } : undefined,
    // Never log secrets, card tokens, raw keys, the URL (customer ids, keys in paths) or its query string:
    // requests are summarised by route pattern (`/v1/customers/:customerId/data`), not dumped.
    serializers: {
      // Bound when the request starts, before any route is matched: the route pattern comes with requestFields.
      req: (request: { id: string; method: string }) => ({ id: request.id, method: request.method }),
      // No status before the headers went out (an aborted request): the response's default (200, or the 201 Nest
      // sets before a POST's handler runs) would read as a success. pino's standard serializer says null too.
      res: (response: ServerResponse) => ({ statusCode: response.headersSent ? response.statusCode : null }),
      err: stdSerializers.err,
    },
    // They are handed Node's request and response as they are: wrapped (the default), pino's standard
    // serializers first copied the URL, query and every header of each request, for the two fields kept.
    wrapSerializers: false,
    // What only the end of a request knows (route, tenant, operation, key digest), added to the line itself.
    // Not customProps: pino-http then built a child logger per request at the end (and compared bindings
    // as strings), ~6% of a read's CPU in the bench's profile, for fields logged once.
    customSuccessObject: (request: IncomingMessage, response: ServerResponse, line: object) => ({
      ...line,
      ...requestFields(request, response, digestKey, skippedBefore),
    }),
    customErrorObject: (request: IncomingMessage, response: ServerResponse, _error: Error, line: object) => ({
      ...line,
      ...requestFields(request, response, digestKey, skippedBefore),
    }),
    // No `redact`: the serializers above are the only way a request or a response reaches a line, and they
    // keep the request id, method and status - no header, so no Authorization or Idempotency-Key, ever
    // (test/process/logging.e2e-spec.ts reads every line for them). Redaction re-cloned each line for nothing.
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
}

@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [appConfig.KEY, idempotencyConfig.KEY],
      useFactory: (config: AppConfig, idempotency: IdempotencyConfig) => {
        const options = requestLogOptions(config, idempotency);
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
