// The HTTP contract suite (test/idempotency/idempotency.e2e-spec.ts) again, unchanged,
// with the Redis fast path in front of MongoDB (issue 16): the same answers
// and the same database, whichever store answered. Skipped, with the reason
// in its titles, when the run has no redis-server.
import { redisMode, useStoreMode } from '../support/store-modes.js';

useStoreMode(redisMode());
await import('./idempotency.e2e-spec.js');
