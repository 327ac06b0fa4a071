import { describe, expect, it } from '@jest/globals';
import { contentDiff } from './content-diff.js';

describe('contentDiff', () => {
  const expected = { _id: 'pay_1', amountMinor: 2500, payload: { a: [1, 2] }, createdAt: new Date(1) };

  it('is empty for the same content, whatever the fields left out say', () => {
    expect(contentDiff({ ...expected, createdAt: new Date(2) }, expected, ['_id', 'amountMinor', 'payload'])).toEqual([]);
  });

  it('names each differing field, nested values compared deeply', () => {
    expect(contentDiff({ ...expected, amountMinor: 2499, payload: { a: [2, 1] } }, expected, ['_id', 'amountMinor', 'payload'])).toEqual([
      'amountMinor',
      'payload',
    ]);
  });
});
