import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { Counter, Registry } from 'prom-client';
import { guardUnhandledRejections } from './unhandled-rejections.js';

describe('guardUnhandledRejections', () => {
  const setUp = () => {
    const registry = new Registry();
    const counter = new Counter({
      name: 'process_unhandled_rejections_total',
      help: 'h',
      labelNames: ['kind'] as const,
      registers: [registry],
    });
    const logged: { message: unknown; stack?: string }[] = [];
    const target = new EventEmitter();
    const remove = guardUnhandledRejections(counter, { error: (message, stack) => logged.push({ message, stack }) }, target as never);
    return { registry, logged, target, remove };
  };

  it('logs every rejection at error level with its stack and counts it by error class, hiding nothing', async () => {
    const { registry, logged, target } = setUp();
    class MongoWaitQueueTimeoutError extends Error {
      override name = 'MongoWaitQueueTimeoutError';
    }
    target.emit('unhandledRejection', new MongoWaitQueueTimeoutError('Timed out while checking out a connection'));
    target.emit('unhandledRejection', new TypeError('x is not a function'));
    target.emit('unhandledRejection', 'a bare string');
    const text = await registry.metrics();
    expect(text).toContain('process_unhandled_rejections_total{kind="MongoWaitQueueTimeoutError"} 1');
    expect(text).toContain('process_unhandled_rejections_total{kind="TypeError"} 1');
    expect(text).toContain('process_unhandled_rejections_total{kind="string"} 1');
    expect(logged).toHaveLength(3);
    expect(logged[1].stack).toMatch(/^TypeError: x is not a function\n\s+at /);
    expect(logged[0].message).toMatchObject({ kind: 'MongoWaitQueueTimeoutError' });
  });

  it('keeps the kind label bounded: past 32 error classes the rest are "other"', async () => {
    const { registry, target } = setUp();
    for (let i = 0; i < 40; i++) {
      const error = new Error('e');
      error.name = `Kind${i}Error`;
      target.emit('unhandledRejection', error);
    }
    expect(await registry.metrics()).toContain('process_unhandled_rejections_total{kind="other"} 8');
  });

  it('is removable', () => {
    const { target, remove } = setUp();
    expect(target.listenerCount('unhandledRejection')).toBe(1);
    remove();
    expect(target.listenerCount('unhandledRejection')).toBe(0);
  });
});
