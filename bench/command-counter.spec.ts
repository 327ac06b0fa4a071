import { describe, expect, it } from '@jest/globals';
import { OP_MSG, opMsg } from '@idempotent-orders/nest-idempotency/embedded-store';
import { Binary, Long } from 'mongodb';
import { BackgroundWork, commandName, commandTarget, perRequest } from './command-counter.js';

const message = (document: Record<string, unknown>) => {
  const bytes = opMsg(7, 0, document);
  return { bytes, requestId: 7, responseTo: 0, opCode: OP_MSG };
};

describe('command counter', () => {
  it('reads the command name from the bytes', () => {
    expect(commandName(message({ commitTransaction: 1, $db: 'admin' }))).toBe('commitTransaction');
    expect(commandName(message({ find: 'orders', filter: { _id: 'x' } }))).toBe('find');
  });

  it('reads the collection a command names, when its first value is one', () => {
    expect(commandTarget(message({ find: 'orders', filter: { _id: 'x' } }))).toBe('orders');
    expect(commandTarget(message({ update: 'idempotency_records', updates: [] }))).toBe('idempotency_records');
    expect(commandTarget(message({ commitTransaction: 1, $db: 'admin' }))).toBeUndefined();
    expect(commandTarget(message({ bulkWrite: 1, ops: [], nsInfo: [] }))).toBeUndefined();
  });

  it("counts the relay's and the consumers' commands, and their transactions' commits, as background work", () => {
    const session = (byte: number) => ({ lsid: { id: new Binary(Buffer.alloc(16, byte), Binary.SUBTYPE_UUID) } });
    const inTransaction = (byte: number) => ({ txnNumber: Long.fromNumber(3), autocommit: false, ...session(byte) });
    const background = new BackgroundWork();
    const target = (document: Record<string, unknown>) => {
      const sent = message(document);
      return background.target(commandName(sent)!, sent);
    };
    // A request writes its event inside its change's transaction; the relay claims and marks outside any.
    expect(target({ update: 'outbox_events', updates: [], ...inTransaction(1) })).toBe('outbox_events');
    expect(target({ update: 'outbox_events', updates: [], txnNumber: Long.fromNumber(4), ...session(2) })).toBe(
      'outbox_events (background)',
    );
    expect(target({ find: 'outbox_events', filter: { status: 'pending' } })).toBe('outbox_events (background)');
    expect(target({ commitTransaction: 1, ...inTransaction(1) })).toBe(undefined);
    // The dispatcher's transaction: its commands and its commit are background work, matched by session.
    expect(target({ find: 'idempotency_inbox', filter: {}, ...inTransaction(9) })).toBe('idempotency_inbox (background)');
    expect(target({ insert: 'webhook_deliveries', documents: [], ...inTransaction(9) })).toBe('webhook_deliveries (background)');
    expect(target({ commitTransaction: 1, ...inTransaction(9) })).toBe('(background)');
    expect(target({ commitTransaction: 1, ...inTransaction(9) })).toBe(undefined);
    expect(target({ find: 'orders', filter: {} })).toBe('orders');
  });

  it('gives commands and transactions per request between two snapshots, and each command by name', () => {
    const before = { commands: 10, commits: 1, aborts: 0, byName: { 'find orders': 2 } };
    const after = { commands: 54, commits: 7, aborts: 1, byName: { 'find orders': 4, commitTransaction: 6 } };
    expect(perRequest(before, after, 2)).toEqual({
      commands: 22,
      transactions: 3,
      aborts: 0.5,
      byName: { 'find orders': 1, commitTransaction: 3 },
    });
    expect(perRequest(before, after, 0)).toBeNull();
  });
});
