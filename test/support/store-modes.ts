// The same contract, twice: MongoDB alone, and with the optional Redis fast
// path in front of it (issue 16). A suite reads its mode with
// currentStoreMode(); a wrapper file sets another one and imports it. The
// Redis run needs the redis-server the globalSetup starts; without one it is
// skipped, and says why.
import { describe } from '@jest/globals';

export interface StoreMode {
  name: string;
  /** Extra environment of the app under test. */
  env: Record<string, string>;
  redis: boolean;
  /** Why this mode cannot run here (it is skipped), or undefined. */
  skip?: string;
}

export const MONGO_ONLY: StoreMode = { name: 'MongoDB only', env: {}, redis: false };

export function redisMode(): StoreMode {
  const url = process.env.TEST_REDIS_URL;
  return url
    ? { name: 'Redis fast path', env: { REDIS_URL: url }, redis: true }
    : { name: 'Redis fast path', env: {}, redis: true, skip: 'no redis-server on this machine (see the run banner)' };
}

let current: StoreMode = MONGO_ONLY;

/** Set by a wrapper file before it imports a suite, so the suite runs in that mode (test/idempotency/idempotency.redis.e2e-spec.ts). */
export function useStoreMode(mode: StoreMode): void {
  current = mode;
}

/** MongoDB only, unless a wrapper chose another mode. */
export function currentStoreMode(): StoreMode {
  return current;
}

/** describe(), or describe.skip() with the reason in its title when the mode cannot run here. */
export function describeMode(mode: StoreMode, title: string, body: () => void): void {
  if (!mode.skip) return describe(`${title} [${mode.name}]`, body);
  process.stdout.write(`SKIPPED "${title}" [${mode.name}]: ${mode.skip}\n`);
  describe.skip(`${title} [${mode.name}: SKIPPED - ${mode.skip}]`, body);
}
