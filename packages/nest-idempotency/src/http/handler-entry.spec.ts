import { describe, expect, it } from '@jest/globals';
import { Header, HttpCode, Post } from '@nestjs/common';
import { HEADERS_METADATA, HTTP_CODE_METADATA, INTERCEPTORS_METADATA, METHOD_METADATA } from '@nestjs/common/constants.js';
import { Idempotent } from './idempotent.decorator.js';
import { IDEMPOTENT_ROUTE_METADATA } from './route-metadata.js';
import { runTracingEntry } from './handler-entry.js';

class Notes {
  @Post()
  @Idempotent({ operation: 'notes.create' })
  @HttpCode(202)
  @Header('cache-control', 'no-store')
  create(text: string): string {
    return `created ${text}`;
  }
}

const handler = Notes.prototype.create;

describe('@Idempotent() wraps the handler so simple mode knows whether it was entered (issue 48)', () => {
  it('keeps what Nest reads from the handler: metadata written before and after it, and the name', () => {
    expect(handler.name).toBe('create');
    expect(Reflect.getMetadata(HTTP_CODE_METADATA, handler)).toBe(202);
    expect(Reflect.getMetadata(HEADERS_METADATA, handler)).toEqual([{ name: 'cache-control', value: 'no-store' }]);
    expect(Reflect.getMetadata(METHOD_METADATA, handler)).toBeDefined();
    expect(Reflect.getMetadata(IDEMPOTENT_ROUTE_METADATA, handler)).toEqual({ operation: 'notes.create' });
    expect(Reflect.getMetadata(INTERCEPTORS_METADATA, handler)).toHaveLength(1);
  });

  it('calls through with its receiver and arguments, in or out of a traced run', async () => {
    expect(new Notes().create('milk')).toBe('created milk');
    expect(await runTracingEntry(() => Promise.resolve(new Notes().create('milk')))).toEqual({ value: 'created milk' });
  });

  it('says the handler was not entered when what ran before it threw (a pipe), and that it was when the handler threw', async () => {
    const refusal = new Error('text: a non-empty string');
    expect(await runTracingEntry(() => Promise.reject(refusal))).toEqual({ error: refusal, entered: false });
    const thrown = await runTracingEntry(async () => {
      await Promise.resolve(); // a pipe's await: the async context carries on
      new Notes().create('milk');
      throw new Error('the ledger refused it');
    });
    expect(thrown).toMatchObject({ entered: true });
  });
});
