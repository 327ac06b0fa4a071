import { DomainError } from '../common/domain-error.js';

export class UnauthorizedError extends DomainError {
  readonly code = 'unauthorized';

  constructor() {
    super('Send a valid API key as "Authorization: Bearer <key>".');
  }
}
