import { describe, expect, it } from '@jest/globals';
import { Res, type CallHandler, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { lastValueFrom } from 'rxjs';
import { IdempotencyKey, Idempotent } from './idempotent.decorator.js';
import { IdempotencyKeyInterceptor } from './idempotency.interceptor.js';
import type { IdempotencyService } from '../protocol/idempotency.service.js';
import type { SingleTransactionWorks } from '../protocol/single-transaction.js';
import type { IdempotencySettings } from '../options.js';
import type { IdempotentHttpResponse } from './platform.js';

/** Phases-API handlers: one answers through @Res() (Nest sends nothing for it), one with @Res({ passthrough: true }). */
class Widgets {
  @Idempotent({ operation: 'widgets.create' })
  create(@IdempotencyKey() key: unknown, @Res() reply: unknown): unknown[] {
    return [key, reply];
  }

  @Idempotent({ operation: 'widgets.ship' })
  ship(@IdempotencyKey() key: unknown, @Res({ passthrough: true }) reply: unknown): unknown[] {
    return [key, reply];
  }
}

function replayOf(handler: 'create' | 'ship') {
  const sent: { status?: number; headers: Record<string, string>; body?: unknown } = { headers: {} };
  const reply: IdempotentHttpResponse = {
    status: (code) => (sent.status = code),
    header: (name, value) => (sent.headers[name] = value),
    send: (body) => (sent.body = body),
  };
  const headers = { 'idempotency-key': 'k-0001' };
  const request = {
    method: 'POST',
    url: '/widgets',
    headers,
    headersDistinct: { 'idempotency-key': ['k-0001'] },
    body: { n: 1 },
    params: {},
  };
  const context = {
    getHandler: () => Widgets.prototype[handler],
    getClass: () => Widgets,
    switchToHttp: () => ({ getRequest: () => request, getResponse: () => reply }),
  } as unknown as ExecutionContext;
  const stored = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"w1"}' };
  const idempotency = {
    lookUpEarly: async () => ({ replay: { response: stored, replayed: true, keyExpiresAt: new Date(0), originalAt: new Date(0) } }),
  } as unknown as IdempotencyService;
  const settings = { tenant: () => 'acme' } as unknown as IdempotencySettings;
  const interceptor = new IdempotencyKeyInterceptor(new Reflector(), idempotency, {} as SingleTransactionWorks, settings);
  const next: CallHandler = { handle: () => Promise.reject(new Error('a replay never reaches the handler')) as never };
  return { sent, result: interceptor.intercept(context, next) };
}

describe('IdempotencyKeyInterceptor: a replay on a phases-API route', () => {
  it('writes the stored answer and completes with a value when the handler takes @Res(): no EmptyError for Nest to build', async () => {
    const { sent, result } = replayOf('create');
    // With EMPTY, lastValueFrom rejects with rxjs's EmptyError: Nest's router did that on every replay.
    await expect(lastValueFrom(await result)).resolves.toBeUndefined();
    expect(sent).toMatchObject({ status: 201, body: '{"id":"w1"}', headers: { 'idempotent-replayed': 'true' } });
  });

  it('sends nothing more for a handler whose response Nest sends (@Res({ passthrough: true })): the stream stays empty', async () => {
    const { sent, result } = replayOf('ship');
    await expect(lastValueFrom(await result)).rejects.toThrow('no elements in sequence');
    expect(sent.status).toBe(201);
  });
});
