/*
 * Duck-typed on purpose: errors can come from the driver copy mongoose
 * bundles, so `instanceof MongoServerError` is not reliable.
 */
interface MongoLikeError {
  code?: unknown;
  codeName?: unknown;
  hasErrorLabel?: (label: string) => boolean;
}

export function isDuplicateKey(error: unknown): boolean {
  return (error as MongoLikeError)?.code === 11000;
}

export function isWriteConflict(error: unknown): boolean {
  return (error as MongoLikeError)?.code === 112;
}

export function hasLabel(error: unknown, label: string): boolean {
  const candidate = error as MongoLikeError;
  return typeof candidate?.hasErrorLabel === 'function' && candidate.hasErrorLabel(label);
}
