import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ValidationPipe, VersioningType, type INestApplication } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Logger as PinoLogger } from 'nestjs-pino';
import { ProblemDetailsFilter } from './common/problem-details.filter.js';
import type { HttpSettings } from './config/configuration.js';
import { closeIdleConnectionsOnClose } from './http/close-idle-connections.js';
import { answerClientError, answerFrameworkError, clientErrorReason, MAX_PARAM_LENGTH } from './http/framework-errors.js';
import { MetricsService } from './metrics/metrics.service.js';
import { setUpOpenApi } from './openapi.js';

/**
 * One counter and one histogram sample per response, labelled by route
 * template (never the raw URL); and the request id echoed for correlation.
 */
function countRequests(app: NestFastifyApplication): void {
  const metrics = app.get(MetricsService);
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', async (request, reply) => {
      reply.header('x-request-id', request.id);
    })
    .addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
      metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
    });
  // Refused by Node's parser before there was a request (see answerClientError): counted here.
  app
    .getHttpAdapter()
    .getInstance()
    .server.on('clientError', (error: NodeJS.ErrnoException) => metrics.httpClientErrors.inc({ reason: clientErrorReason(error) }));
}

/**
 * Every limit a single client could otherwise stretch: the time to send its
 * headers and its request, the idle keep-alive, the body size, the length of
 * a path parameter. Node checks the two request timeouts on a timer, so that
 * timer runs often enough for them to mean what they say.
 */
export function createAdapter(http: HttpSettings): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: http.bodyLimitBytes,
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    http: {
      headersTimeout: http.headersTimeoutMs,
      requestTimeout: http.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(http.headersTimeoutMs / 4)),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    trustProxy: true,
    return503OnClosing: true,
    // A caller's well-formed X-Request-Id is kept (and logged); otherwise each request gets a UUID.
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
  });
}

/**
 * The one HTTP pipeline, used by main.ts and by every e2e test, so tests
 * exercise exactly what production runs. (Signal handling is process-wide,
 * so main.ts subscribes to SIGTERM itself; tests close their apps.)
 */
export async function configureApp(app: NestFastifyApplication): Promise<INestApplication> {
  app.useLogger(app.get(PinoLogger));
  app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' });
  app.useGlobalPipes(
    new ValidationPipe({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      forbidUnknownValues: true,
      stopAtFirstError: false,
      validationError: { target: false, value: false },
    }),
  );
  app.useGlobalFilters(new ProblemDetailsFilter());
  const fastify = app.getHttpAdapter().getInstance();
  // JSON only: other bodies get 415 instead of reaching the validators as strings or forms.
  fastify.removeContentTypeParser(['text/plain', 'application/x-www-form-urlencoded']);
  closeIdleConnectionsOnClose(fastify);
  countRequests(app);
  setUpOpenApi(app);
  return app;
}
