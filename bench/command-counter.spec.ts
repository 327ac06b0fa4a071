import { describe, expect, it } from '@jest/globals';
import { OP_MSG, opMsg } from '@idempotent-orders/nest-idempotency/embedded-store';
import { commandName, perRequest } from './command-counter.js';

const message = (document: Record<string, unknown>) => {
  const bytes = opMsg(7, 0, document);
  return { bytes, requestId: 7, responseTo: 0, opCode: OP_MSG };
};

describe('command counter', () => {
  it('reads the command name from the bytes', () => {
    expect(commandName(message({ commitTransaction: 1, $db: 'admin' }))).toBe('commitTransaction');
    expect(commandName(message({ find: 'orders', filter: { _id: 'x' } }))).toBe('find');
  });

  it('gives commands and transactions per request between two snapshots', () => {
    const before = { commands: 10, commits: 1, aborts: 0, byName: {} };
    const after = { commands: 54, commits: 7, aborts: 1, byName: {} };
    expect(perRequest(before, after, 2)).toEqual({ commands: 22, transactions: 3, aborts: 0.5 });
    expect(perRequest(before, after, 0)).toBeNull();
  });
});
