import { DomainError } from '../../common/domain-error.js';

/**
 * An erasure committed in MongoDB but Redis could not be told to drop the
 * subject's cached answers. The erasure is safe to repeat: the client retries
 * it (503 + Retry-After) until the cache has been told too.
 */
export class CacheInvalidationFailedError extends DomainError {
  readonly code = 'cache_invalidation_failed';
  constructor() {
    super('The erasure was recorded, but cached responses could not be invalidated yet; retry the erasure.');
    this.retryAfterSeconds = 2;
  }
}
