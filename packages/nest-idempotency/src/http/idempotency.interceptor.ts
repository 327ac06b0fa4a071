import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import type { ClientSession } from 'mongoose';
import { EMPTY, lastValueFrom, of, type Observable } from 'rxjs';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { IDEMPOTENCY_PHASES_METADATA, IDEMPOTENT_ROUTE_METADATA, type IdempotentOptions } from './route-metadata.js';
import { idempotencyKeyHeader, parseIdempotencyKey } from './key-header.js';
import { IdempotencyService, type IdempotentResult } from '../protocol/idempotency.service.js';
import type { IdempotencyKeyContext } from '../protocol/work.js';
import type { IdempotentResponse } from '../protocol/record.js';
import { RefusedBeforeWorkError, SingleTransactionWorks } from '../protocol/single-transaction.js';
import { runTracingEntry } from './handler-entry.js';
import { duplicateIntent } from '../protocol/duplicate-guard.js';
import { nodeRequest, routeParams, routeTemplate, type IdempotentHttpRequest, type IdempotentHttpResponse } from './platform.js';

export { IDEMPOTENT_ROUTE_METADATA };

export type { IdempotencyKeyContext };

/** Kept on the raw Node request, where the request logger reads the operation. */
export interface KeyedRequestState {
  idempotency?: IdempotencyKeyContext;
  /** Simple mode: the session of the transaction the handler runs in (`@IdempotencySession()`), while it runs. */
  idempotencySession?: ClientSession;
}

export function keyedState(request: IdempotentHttpRequest): KeyedRequestState {
  return nodeRequest(request) as KeyedRequestState;
}

/**
 * Runs after authentication and before validation pipes: a missing or
 * malformed key is refused (400) before the body is even looked at. Then the
 * key's record is read, once: a retry of an answered request gets its stored
 * answer here, without validating the body again or reaching the handler
 * (IdempotencyService.lookUpEarly); any other request goes on to validation
 * and the handler, carrying the record read.
 *
 * Then one of two modes. A handler that takes `@IdempotencyKey()` drives the
 * protocol itself (the phases API: `IdempotencyService.execute` with its
 * `begin` and `resume`). Any other handler is simple mode: this interceptor
 * claims the key, runs validation and the handler inside the one transaction
 * that completes the record (`@IdempotencySession()` hands the handler its
 * session), stores what the handler returned and sends it.
 */
@Injectable()
export class IdempotencyKeyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly idempotency: IdempotencyService,
    private readonly single: SingleTransactionWorks,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly settings: IdempotencySettings,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const options = this.reflector.get<IdempotentOptions>(IDEMPOTENT_ROUTE_METADATA, context.getHandler());
    const http = context.switchToHttp();
    const request = http.getRequest<IdempotentHttpRequest>();
    const reply = http.getResponse<IdempotentHttpResponse>();
    // Nest set the route's status (`@HttpCode()` or its default) before the interceptors; the handler may change it.
    const routeStatus = reply.statusCode;
    const key: IdempotencyKeyContext = {
      clientKey: parseIdempotencyKey(idempotencyKeyHeader(nodeRequest(request))),
      operation: options.operation,
      ttlSeconds: options.ttlSeconds,
      schemaVersion: options.schemaVersion ?? 1,
      onStoreDown: options.onStoreDown ?? 'closed',
      method: request.method,
      route: routeTemplate(request),
      params: routeParams(request),
      duplicateGuard: duplicateIntent(options.duplicateGuard, request.headers),
    };
    keyedState(request).idempotency = key;
    // The app's tenant resolver (options.tenant) runs after its auth guard: no tenant is a wiring mistake, never a client's.
    const tenant = this.settings.tenant(request);
    if (!tenant) throw new Error('@Idempotent() route without a tenant: the tenant option returned none (is the route authenticated?)');
    const early = await this.idempotency.lookUpEarly(key, tenant, request.body);
    const phases = this.reflector.get<boolean>(IDEMPOTENCY_PHASES_METADATA, context.getHandler()) === true;
    if (early.replay) {
      if (!phases) return of(simpleAnswer(early.replay, reply, routeStatus));
      sendIdempotentResult(reply, early.replay);
      // Written: a handler that takes @Res() sends its own answers, so Nest sends nothing for it, and the stream
      // completes with a value Nest ignores. (EMPTY made Nest's router build an EmptyError, stack trace and all,
      // on every replay: ~4% of a replay's CPU in the bench's profile.) Any other handler gets nothing more.
      return answersItself(context) ? of(undefined) : EMPTY;
    }
    key.prefetched = early.owner;
    if (phases) return next.handle();
    return of(simpleAnswer(await this.simple(key, tenant, request, reply, next), reply, routeStatus));
  }

  /**
   * Simple mode: claim, then the handler (Nest runs the pipes and the handler
   * again on each subscription to `next.handle()`, so a transient retry of
   * the transaction runs both again) and the record's completion in one
   * transaction. The fingerprint is of the body as parsed, before pipes (the
   * claim comes before them): a retry is the same bytes, whatever a pipe does.
   * A request a pipe refuses never enters the handler: its claim is
   * withdrawn, and the key is as unused as before it (issue 48).
   */
  private async simple(
    key: IdempotencyKeyContext,
    tenant: string,
    request: IdempotentHttpRequest,
    reply: IdempotentHttpResponse,
    next: CallHandler,
  ): Promise<IdempotentResult> {
    const state = keyedState(request);
    const work = this.single.work(async (session) => {
      state.idempotencySession = session;
      try {
        const ran = await runTracingEntry(() => lastValueFrom(next.handle(), { defaultValue: undefined }));
        if ('value' in ran) return responseOf(ran.value, reply);
        // A pipe refused the request: the handler never ran, so the claim is given back (no record kept).
        throw ran.entered ? ran.error : new RefusedBeforeWorkError(ran.error);
      } finally {
        state.idempotencySession = undefined;
      }
    });
    return this.idempotency.execute(this.idempotency.requestFor(key, tenant, request.body), work);
  }
}

const answersItselfByHandler = new WeakMap<object, boolean>();

/**
 * Whether Nest leaves the response to the handler: it takes `@Res()` or
 * `@Next()` without `passthrough` (Nest's own rule, RouterExecutionContext.isResponseHandled).
 * Read from the route's metadata once per handler.
 */
function answersItself(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  let answers = answersItselfByHandler.get(handler);
  if (answers === undefined) {
    const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ?? {}) as Record<string, unknown>;
    const takesResponse = Object.keys(args).some((key) => {
      const type = Number(key.split(':')[0]);
      return type === Number(RouteParamtypes.RESPONSE) || type === Number(RouteParamtypes.NEXT);
    });
    answers = takesResponse && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, context.getClass(), handler.name) !== true;
    answersItselfByHandler.set(handler, answers);
  }
  return answers;
}

/** What a simple-mode handler returned, as the bytes to store: its status and `Location` as set on the response (`@HttpCode`, `@Header`). */
function responseOf(value: unknown, reply: IdempotentHttpResponse): IdempotentResponse {
  if (value !== null && typeof value === 'object' && (Buffer.isBuffer(value) || typeof (value as { pipe?: unknown }).pipe === 'function')) {
    throw new TypeError('A simple-mode @Idempotent() handler answers a JSON value or a string, not a stream or a Buffer');
  }
  const headers: Record<string, string> = {};
  const body = value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  const type = reply.getHeader?.('content-type');
  if (body !== '')
    headers['content-type'] =
      typeof type === 'string' ? type : typeof value === 'string' ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8';
  const location = reply.getHeader?.('location');
  if (typeof location === 'string') headers['location'] = location;
  return { status: reply.statusCode ?? 200, headers, body };
}

/**
 * A simple-mode result as the value Nest sends (simple-mode handlers do not
 * take `@Res()`, so Nest, not this interceptor, writes the response), its
 * stored status, headers and exact bytes either way.
 *
 * When the status is the route's (almost always), the headers go on the reply
 * and the stored body through Nest's plain reply: one write with its
 * `Content-Length`. Otherwise (the handler set another status with
 * `@Res({ passthrough: true })`, or a body was stored without a content type)
 * a web `Response`, whose status wins over the route's, but whose body Nest
 * streams: chunked, through web streams. In the bench's profile that stream
 * was ~600 of the ~1,500 us of CPU a replay cost (issue 47).
 */
function simpleAnswer(result: IdempotentResult, reply: IdempotentHttpResponse, routeStatus: number | undefined): unknown {
  const { status, headers, body } = result.response;
  if (status !== routeStatus || (body !== '' && !headers['content-type'])) return webResponse(result);
  for (const [name, value] of Object.entries(resultHeaders(result))) reply.header(name, value);
  return body === '' ? undefined : body;
}

/**
 * An idempotent result as a web `Response`, which Nest (12.5+, both adapters)
 * sends as the whole answer: its status, headers and exact bytes win over the
 * route's `@HttpCode()` and `@Header()`.
 */
function webResponse(result: IdempotentResult): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(resultHeaders(result))) headers.set(name, value);
  const { status, body } = result.response;
  return new Response(body === '' || [204, 205, 304].includes(status) ? null : body, { status, headers });
}

/** Headers kept with a stored response and sent again on replay; nothing else is stored. */
export const REPLAYED_HEADERS = ['content-type', 'location'];

/**
 * Writes an idempotent result: the original status, headers and bytes, plus the key's metadata
 * (Idempotency-Expires; on a replay Idempotent-Replayed and Idempotent-Original-Date).
 */
export function sendIdempotentResult(reply: IdempotentHttpResponse, result: IdempotentResult): void {
  reply.status(result.response.status);
  for (const [name, value] of Object.entries(resultHeaders(result))) reply.header(name, value);
  reply.send(result.response.body);
}

/** The headers of an idempotent result: the stored ones kept, then the key's metadata. */
function resultHeaders(result: IdempotentResult): Record<string, string> {
  const { response } = result;
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    if (response.headers[name]) headers[name] = response.headers[name];
  }
  if (result.replayed) {
    headers['idempotent-replayed'] = 'true';
    // When the original answer was stored: a replay of this morning's order is not mistaken for a new one.
    if (result.originalAt) headers['idempotent-original-date'] = result.originalAt.toUTCString();
  }
  headers['idempotency-expires'] = result.keyExpiresAt.toUTCString();
  return headers;
}
