import { DomainError } from '../common/domain-error.js';

export class UnauthorizedError extends DomainError {
  readonly code = 'unauthorized';

  constructor() {
    super('Send a valid API key as "Authorization: Bearer <key>".');
  }
}

export class InsufficientScopeError extends DomainError {
  readonly code = 'insufficient_scope';

  constructor(scope: string) {
    super(`This API key lacks the "${scope}" scope.`);
  }
}
