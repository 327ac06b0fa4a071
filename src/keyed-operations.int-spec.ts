import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { ModulesContainer } from '@nestjs/core';
import {
  IDEMPOTENT_ROUTE_METADATA,
  IdempotencyCancellation,
  IdempotencyReaper,
  type IdempotentOptions,
} from '@idempotent-orders/nest-idempotency';
import { startApp, type TestApp } from '../test/support/test-app.js';
import { CREATE_ORDER_OPERATION } from './orders/orders.service.js';

/**
 * Each operation folder plugs its own recovery into the package at boot
 * (IdempotencyReaper.register, IdempotencyCancellation.register): a folder
 * that forgets is silent until a crashed request is never finished, or a
 * cancel throws. Booting the real AppModule, every keyed route's operation
 * must have a reconciler, and the operation the cancel route names a
 * canceler.
 */
describe('every keyed operation is recoverable once the app has booted', () => {
  let t: TestApp;
  const reconciled = new Set<string>();

  beforeAll(async () => {
    const register = jest.spyOn(IdempotencyReaper.prototype, 'register');
    try {
      t = await startApp({ dbName: 'test_keyed_operations' });
      for (const [operation] of register.mock.calls) reconciled.add(operation);
    } finally {
      register.mockRestore();
    }
  });
  afterAll(async () => t?.close());

  /** The operation of every @Idempotent route the booted app serves. */
  function keyedOperations(): string[] {
    const operations = new Set<string>();
    for (const module of t.app.get(ModulesContainer).values()) {
      for (const wrapper of module.controllers.values()) {
        const prototype = (wrapper.metatype as { prototype?: object } | null)?.prototype;
        if (!prototype) continue;
        for (const name of Object.getOwnPropertyNames(prototype)) {
          const handler = (prototype as Record<string, unknown>)[name];
          if (typeof handler !== 'function') continue;
          const options = Reflect.getMetadata(IDEMPOTENT_ROUTE_METADATA, handler) as IdempotentOptions | undefined;
          if (options) operations.add(options.operation);
        }
      }
    }
    return [...operations].sort();
  }

  it('has a reconciler for every keyed route', () => {
    const operations = keyedOperations();
    expect(operations).toEqual(expect.arrayContaining(['orders.capture', 'orders.create', 'orders.refund', 'orders.void']));
    expect(operations.filter((operation) => !reconciled.has(operation))).toEqual([]);
  });

  it('has a canceler for the operation cancel by key undoes', () => {
    expect(t.app.get(IdempotencyCancellation).cancelable(CREATE_ORDER_OPERATION)).toBe(true);
  });
});
