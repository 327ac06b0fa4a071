/**
 * Base of every error a service throws on purpose. `code` is the stable,
 * snake_case string clients see in problem+json; the HTTP status lives in
 * one table (problem-details.filter.ts), never in services.
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;
  /** Seconds a client should wait before retrying, when retrying makes sense. */
  retryAfterSeconds?: number;
  /** Extra members of the problem document (RFC 9457 extensions), e.g. `errors`. */
  extensions?: Record<string, unknown>;

  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
