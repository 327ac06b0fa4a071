/** A call held by a test: `reached` says it is waiting, `release` lets it go on. */
export interface Latch {
  phase: 'before' | 'after';
  reached: (key: string) => void;
  release: Promise<void>;
}

/**
 * Holds the calling code at `latch` until the test releases it, or until
 * someone releases everything `waiting` holds (a test that failed with a call
 * still held must not leave it hanging past its app's close).
 */
export async function holdAt(latch: Pick<Latch, 'reached' | 'release'>, key: string, waiting: Set<() => void>): Promise<void> {
  let released!: () => void;
  const forced = new Promise<void>((resolve) => (released = resolve));
  waiting.add(released);
  latch.reached(key);
  try {
    await Promise.race([latch.release, forced]);
  } finally {
    waiting.delete(released);
  }
}
