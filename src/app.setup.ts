import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Logger, VersioningType, type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { Logger as PinoLogger } from 'nestjs-pino';
import { ApiKeyRegistry } from './auth/api-key.registry.js';
import { UnauthorizedError } from './auth/auth.errors.js';
import { ProblemDetailsFilter, sendProblem, toProblemResponse } from './common/problem-details.filter.js';
import { createValidationPipe } from './common/validation.js';
import type { HttpSettings } from './config/configuration.js';
import { appConfig, httpConfig, webhooksConfig, type AppConfig, type HttpConfig, type WebhooksConfig } from './config/config.tokens.js';
import { closeIdleConnectionsOnClose } from './http/close-idle-connections.js';
import { answerClientError, answerFrameworkError, clientErrorReason, MAX_PARAM_LENGTH } from './http/framework-errors.js';
import { parseJsonBody } from './http/json-body.js';
import { connectionsCheckingInterval, enforceRequestDeadline } from './http/request-deadline.js';
import { isSignedRawBodyRoute } from './http/signed-raw-body.js';
import { CLIENT_REQUEST_ID, REPLAYED, ROUTE_PATTERN } from './logging/route-pattern.js';
import { MetricsService } from './metrics/metrics.service.js';
import { guardWebhookDoor, WebhookRefusals } from './webhooks/webhook-door.js';
import { setUpOpenApi } from './openapi.js';

/**
 * Options for NestFactory.create / createNestApplication. Nest's own body
 * parsers stay off: left on, `init()` registers a form (urlencoded) parser
 * again after configureApp, and forms would reach the validators. The one
 * JSON parser is configureApp's (Nest's would collide with it and fail the boot).
 */
export const NEST_APP_OPTIONS: NestApplicationOptions = { bodyParser: false };

/**
 * One counter and one histogram sample per response, labelled by route
 * template (never the raw URL); and the request id echoed for correlation.
 * Callback hooks, not async ones: nothing here waits, and an async hook costs
 * a promise and a microtask on every request.
 */
function countRequests(app: NestFastifyApplication): void {
  const metrics = app.get(MetricsService);
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id);
      const raw = request.raw as IncomingMessage & { [ROUTE_PATTERN]?: string; [CLIENT_REQUEST_ID]?: string };
      raw[ROUTE_PATTERN] = request.routeOptions.url ?? 'unmatched';
      // API answers carry customer data: no shared or browser cache keeps them.
      if (raw[ROUTE_PATTERN].startsWith('/v1/')) reply.header('cache-control', 'no-store');
      const given = request.headers['x-request-id'];
      if (typeof given === 'string' && /^[\w.-]{1,64}$/.test(given)) raw[CLIENT_REQUEST_ID] = given;
      done();
    })
    .addHook('onSend', (request, reply, payload, done) => {
      // For the request log's `replayed` field: the header is only readable here, before writeHead takes it.
      if (reply.getHeader('idempotent-replayed') === 'true') (request.raw as IncomingMessage & { [REPLAYED]?: true })[REPLAYED] = true;
      done(null, payload);
    })
    .addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
      metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
      done();
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
      connectionsCheckingInterval: connectionsCheckingInterval(http),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    // Off unless TRUST_PROXY names the balancer: otherwise any client could set its own X-Forwarded-For.
    trustProxy: http.trustProxy,
    return503OnClosing: true,
    // Every request gets an id of ours (answered as X-Request-Id, in every log and audit line): a caller
    // cannot reuse another request's id to muddy the trail. A caller's well-formed id is logged beside it.
    requestIdHeader: false,
    genReqId: () => randomUUID(),
  });
}

/**
 * JSON only: other bodies get 415 instead of reaching the validators as
 * strings or forms. JSON is measured before it is parsed (depth, values) and
 * keys class-transformer would silently drop are refused (see json-body.ts).
 */
function acceptJsonOnly(fastify: FastifyInstance, http: HttpConfig): void {
  const limits = { maxDepth: http.jsonMaxDepth, maxValues: http.jsonMaxValues };
  fastify.removeContentTypeParser(['application/json', 'text/plain']);
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: http.bodyLimitBytes }, (request, body, done) => {
    // Verified over the exact bytes, then decoded and parsed by the handler: a stranger's body is never parsed here.
    if (isSignedRawBodyRoute(request)) return done(null, body);
    try {
      done(null, parseJsonBody((body as Buffer).toString('utf8'), limits));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/**
 * 401 before the body is read, for every request that has one, and for
 * paths no route matches (so a stranger cannot tell routes from typos). The
 * content-type parser (shape scan, JSON.parse, key walk) runs before Nest's
 * guards; without this an unauthenticated caller had it run for free.
 * Body-less requests to existing routes (health, metrics, docs, and every
 * GET) are left to the guards, which also check scopes.
 */
function refuseStrangersEarly(app: NestFastifyApplication): void {
  const registry = app.get(ApiKeyRegistry);
  const logger = new Logger('ProblemDetails');
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', (request, reply, done) => {
      const hasBody = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;
      const unmatched = request.routeOptions.url === undefined;
      if ((hasBody || unmatched) && !isSignedRawBodyRoute(request) && !registry.authenticateRequest(request.raw)) {
        sendProblem(reply, toProblemResponse(new UnauthorizedError(), logger));
        return;
      }
      done();
    });
}

/**
 * The one HTTP pipeline, used by main.ts and by every e2e test, so tests
 * exercise exactly what production runs. (Signal handling is process-wide,
 * so main.ts subscribes to SIGTERM itself; tests close their apps.)
 */
export function configureApp(app: NestFastifyApplication): INestApplication {
  app.useLogger(app.get(PinoLogger));
  app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' });
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new ProblemDetailsFilter());
  const fastify = app.getHttpAdapter().getInstance();
  const http = app.get<HttpConfig>(httpConfig.KEY);
  acceptJsonOnly(fastify, http);
  enforceRequestDeadline(fastify, http);
  closeIdleConnectionsOnClose(fastify);
  countRequests(app);
  refuseStrangersEarly(app);
  guardWebhookDoor(fastify, app.get<WebhooksConfig>(webhooksConfig.KEY), app.get(MetricsService), app.get(WebhookRefusals));
  // Optional in production (DOCS_ENABLED): the document maps every route for whoever asks.
  if (app.get<AppConfig>(appConfig.KEY).docsEnabled) setUpOpenApi(app);
  return app;
}
