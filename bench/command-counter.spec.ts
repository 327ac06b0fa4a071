import { describe, expect, it } from '@jest/globals';
import { OP_MSG, opMsg } from '@idempotent-orders/nest-idempotency/embedded-store';
import { Long } from 'mongodb';
import { commandName, commandTarget, perRequest, relayOrTarget } from './command-counter.js';

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

  it("tells the outbox relay's commands (outside any transaction) from a request's event write (inside its transaction)", () => {
    const inTransaction = { txnNumber: Long.fromNumber(3), autocommit: false, lsid: { id: 'x' } };
    const retryable = { txnNumber: Long.fromNumber(4), lsid: { id: 'x' } };
    const write = message({ update: 'outbox_events', updates: [], ...inTransaction });
    expect(relayOrTarget(write, commandTarget(write))).toBe('outbox_events');
    const mark = message({ update: 'outbox_events', updates: [], ...retryable });
    expect(relayOrTarget(mark, commandTarget(mark))).toBe('outbox_events (relay)');
    const claim = message({ find: 'outbox_events', filter: { status: 'pending' } });
    expect(relayOrTarget(claim, commandTarget(claim))).toBe('outbox_events (relay)');
    const order = message({ find: 'orders', filter: {} });
    expect(relayOrTarget(order, commandTarget(order))).toBe('orders');
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
