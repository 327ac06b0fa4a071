import { isDeepStrictEqual } from 'node:util';

/**
 * The fields (of those named) on which a stored document differs from the one
 * we would write. Empty: it is exactly ours - same deterministic id, same
 * content - and can be adopted instead of written again. Fields that only
 * say when it was written (createdAt, postedAt) are left out by the caller.
 */
export function contentDiff<T extends object>(stored: T, expected: T, fields: readonly (keyof T)[]): string[] {
  return fields.filter((field) => !isDeepStrictEqual(stored[field], expected[field])).map(String);
}
