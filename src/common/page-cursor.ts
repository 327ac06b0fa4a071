import { DomainError } from './domain-error.js';

/**
 * Where a list newest first (createdAt, then _id, both descending) stopped:
 * its last item. The cursor a client passes back is this, opaque
 * (base64url of JSON), and checked on the way in.
 */
export interface PagePosition {
  createdAt: Date;
  id: string;
}

export class InvalidCursorError extends DomainError {
  readonly code = 'invalid_cursor';
  constructor() {
    super('The cursor is not one this API returned.');
  }
}

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

/** The position a cursor names; `isId` says what an id of this list looks like. Anything else is InvalidCursorError. */
export function decodeCursor(cursor: string, isId: (id: string) => boolean): PagePosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(String(createdAt));
    if (typeof id !== 'string' || !isId(id) || Number.isNaN(date.getTime())) throw new Error('bad');
    return { createdAt: date, id };
  } catch {
    throw new InvalidCursorError();
  }
}

/** One page of a list read with `limit + 1` items: the first `limit`, and where the next page starts (null on the last). */
export function pageOf<T extends { createdAt: Date; _id: string }>(found: T[], limit: number): { items: T[]; next: PagePosition | null } {
  const items = found.slice(0, limit);
  const last = items.at(-1);
  return { items, next: found.length > limit && last ? { createdAt: last.createdAt, id: last._id } : null };
}

/** The store filter for the items after `position` in that order (all of them without one). */
export function afterPosition(position: PagePosition | null): Record<string, unknown> {
  if (!position) return {};
  return { $or: [{ createdAt: { $lt: position.createdAt } }, { createdAt: position.createdAt, _id: { $lt: position.id } }] };
}
