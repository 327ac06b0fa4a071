/**
 * @idempotent-orders/nest-idempotency - Idempotency-Key for NestJS on
 * MongoDB. Every export below is public API (semver); anything else, and
 * the `./testing` subpath, is not. See README.md for the contract.
 */

// Module and options
export { IdempotencyModule, IDEMPOTENCY_MODULE_OPTIONS } from './idempotency.module.js';
export {
  IDEMPOTENCY_SETTINGS,
  IdempotencyOptionsError,
  resolveOptions,
  type CipherKey,
  type DuplicateGuardOptions,
  type FastPathOptions,
  type IdempotencyModuleExtras,
  type IdempotencyModuleOptions,
  type IdempotencySettings,
} from './options.js';

// Ports and their defaults
export {
  IdempotencyClock,
  IdempotencyMetrics,
  NoopIdempotencyMetrics,
  SystemClock,
  type CacheCircuitState,
  type IdempotencyOutcome,
} from './ports.js';

// HTTP: declare a keyed route, receive its key, send its result
export {
  Idempotent,
  IdempotencyKey,
  IdempotencySession,
  IDEMPOTENT_ROUTE_METADATA,
  type IdempotentOptions,
} from './http/idempotent.decorator.js';
export {
  IdempotencyKeyInterceptor,
  keyedState,
  REPLAYED_HEADERS,
  sendIdempotentResult,
  type IdempotencyKeyContext,
  type KeyedRequestState,
} from './http/idempotency.interceptor.js';
export { idempotencyKeyHeader, parseIdempotencyKey } from './http/key-header.js';
export { IdempotencyProblemFilter, idempotencyProblem } from './http/problem.filter.js';
export { nodeRequest, type IdempotentHttpRequest, type IdempotentHttpResponse } from './http/platform.js';

// The protocol, with or without HTTP
export { IdempotencyService } from './protocol/idempotency.service.js';
export type { IdempotentRequest, IdempotentResult, IdempotentWork, PrefetchedOwner } from './protocol/work.js';
export type { IdempotencyRecord, IdempotentResponse, Lease, RecordCancellation, RecordStatus } from './protocol/record.js';
export { IdempotencyAttempts } from './protocol/attempts.js';
export {
  RefusedBeforeWorkError,
  SingleTransactionWorks,
  SINGLE_TRANSACTION_POINT,
  type SingleTransactionHandler,
} from './protocol/single-transaction.js';
export { deriveClaimId, SubjectDigests, subjectDigest } from './protocol/ids.js';
export { BodyNotCanonicalError } from './protocol/fingerprint.js';
export { erasedResponse } from './protocol/stored-responses.js';
export { IDEMPOTENCY_INTENT_HEADER, type DuplicateIntent } from './protocol/duplicate-guard.js';

// Cancel by key: a consumer plugs its undo in (IdempotencyCancellation.register)
export {
  IdempotencyCancellation,
  undoKeyFor,
  type CancelSettlement,
  type CancelSituation,
  type CancelTarget,
  type Canceler,
  type CancellationView,
} from './protocol/cancellation.js';

// Messages: the consumer side (an event id instead of an Idempotency-Key), the inbox record and the effect in one transaction
export {
  IdempotentMessages,
  inboxId,
  type IdempotentMessagesOptions,
  type InboundMessage,
  type MessageBatchOutcome,
  type MessageEffect,
} from './messages/index.js';

// Recovery and erasure
export { IdempotencyReaper, type ReaperDecision, type ReaperRun, type ReconcileDecision, type Reconciler } from './recovery/reaper.js';
export { IdempotencyAdminService, recordView } from './recovery/admin.service.js';
export { IdempotencyErasure, type ErasedRecord } from './recovery/erasure.js';
export { PeriodicTask } from './recovery/periodic-task.js';

// Store: the transaction runner your writes share with the records, and MongoDB error classes
export { TransactionRunner, TRANSACTION_OPTIONS } from './store/transaction-runner.js';
export { BOOT_RETRY_DEADLINE_MS, retryWhileStoreUnavailable } from './store/boot-retry.js';
export {
  hasLabel,
  isDuplicateKey,
  isStoreTimeout,
  isStoreUnavailable,
  isStoreUnreachable,
  isWriteConflict,
  type StoreDownPolicy,
} from './store/mongo-errors.js';
export { ServiceNameChangedError } from './store/service-binding.js';
export {
  guidanceFor,
  guidedCodes,
  IDEMPOTENCY_PROBLEM_GUIDANCE,
  problem,
  PROBLEM_CONTENT_TYPE,
  problemGuidance,
  registerProblemGuidance,
  retryAfterHeader,
  type Problem,
  type ProblemGuidance,
} from './problem.js';

// Errors
export {
  AttemptAbandonedError,
  AttemptFailedError,
  CacheInvalidationFailedError,
  CacheUnavailableError,
  DuplicateClaimError,
  IdempotencyError,
  IdempotencyKeyCanceledError,
  IdempotencyKeyInUseError,
  IdempotencyIntentInvalidError,
  IdempotencyKeyInvalidError,
  IdempotencyKeyMissingError,
  IdempotencyKeyNotFoundError,
  IdempotencyKeyReusedError,
  IdempotencyLeaseActiveError,
  IdempotencyOperationRequiredError,
  LeaseLostError,
  PossibleDuplicateError,
  RetryLaterError,
  SubjectErasedError,
} from './errors.js';
