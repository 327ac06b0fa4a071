import { ApiProperty } from '@nestjs/swagger';
import type { ReaperDecision, RecordStatus } from '@idempotent-orders/nest-idempotency';

// Exhaustive over the types: a status or decision added without a line here does not compile.
const STATUSES: Record<RecordStatus, true> = { pending: true, complete: true, failed: true, canceled: true };
const DECISIONS: Record<ReaperDecision, true> = { completed: true, abandoned: true, lost_lease: true, error: true, skipped: true };

const DATE_TIME = { type: 'string', format: 'date-time' } as const;

/** What a cancel by key did (src/cancel-by-key/order-cancellation.ts). */
export const CANCEL_OUTCOMES = ['never_run', 'canceled_before_charge', 'refunded', 'voided', 'nothing_to_undo', 'refund_failed'] as const;
export type CancelOutcome = (typeof CANCEL_OUTCOMES)[number];

/** The documented shape of recordView() (idempotency-admin.service.ts): never the stored body. */
export class IdempotencyRecordResponse {
  @ApiProperty({ example: 'orders.create' })
  operation: string;

  @ApiProperty({ type: 'integer', minimum: 1, example: 1, description: 'Response schema version the record was stored under' })
  schemaVersion: number;

  @ApiProperty({ enum: Object.keys(STATUSES), example: 'complete' })
  status: string;

  @ApiProperty({ type: 'integer', minimum: 1, example: 1, description: 'Goes up by one each time a failed attempt is restarted' })
  attempt: number;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'saved',
    description: "Where the operation's work stands (orders: e.g. `charged`, `saved`); null before the first checkpoint",
  })
  recoveryPoint: string | null;

  // Inline rather than a class: OpenAPI 3.0 cannot make a $ref nullable without an allOf that tools read differently.
  @ApiProperty({
    type: 'object',
    nullable: true,
    selfRequired: true,
    description: "A pending record's lease (`expiresAt` in the past: given back, or its worker died); null once the record is final",
    properties: { lockedAt: DATE_TIME, expiresAt: DATE_TIME },
    required: ['lockedAt', 'expiresAt'],
  })
  lease: { lockedAt: string; expiresAt: string } | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    example: 201,
    description: 'Status of the stored response; null while pending or when nothing was stored',
  })
  responseStatus: number | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: '/v1/orders/ord_3b1c',
    description: "What the key created: the stored response's `Location`; null while pending or when the answer had none",
  })
  location: string | null;

  @ApiProperty({
    type: 'object',
    nullable: true,
    selfRequired: true,
    description:
      'Why a pending attempt cannot finish on its own: a document it would write (payment, journal, outbox event) exists with other ' +
      'content. The reaper leaves such a record to a human (docs/runbooks/half-applied-state.md); null otherwise',
    properties: {
      what: { type: 'string', example: 'payment' },
      detail: { type: 'string', nullable: true, example: 'payment pay_3b1c differs in amountMinor' },
      at: DATE_TIME,
    },
    required: ['what', 'detail', 'at'],
  })
  conflict: { what: string; detail: string | null; at: string } | null;

  @ApiProperty({
    type: 'object',
    nullable: true,
    selfRequired: true,
    description:
      'A cancel of the key (`POST /v1/idempotency-keys/{key}/cancel`): `canceledAt` null while its undo still runs (every request ' +
      'under the key is refused with 409 `idempotency_key_canceled` from `requestedAt` on); null when the key was never canceled',
    properties: {
      requestedAt: DATE_TIME,
      canceledAt: { ...DATE_TIME, nullable: true },
      outcome: { type: 'string', nullable: true, enum: [...CANCEL_OUTCOMES, null], example: 'refunded' },
    },
    required: ['requestedAt', 'canceledAt', 'outcome'],
  })
  cancellation: { requestedAt: string; canceledAt: string | null; outcome: string | null } | null;

  @ApiProperty({ ...DATE_TIME, description: 'When the key was first claimed' })
  createdAt: string;

  @ApiProperty({ ...DATE_TIME, description: 'When the key stops being remembered' })
  expiresAt: string;
}

export class IdempotencyKeyResponse {
  @ApiProperty({ example: '8e0f3b1c-6f0e-4c39-9d55-2d3c1f0a7b21' })
  key: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: '/v1/orders/ord_3b1c',
    description: 'The first `location` among the records (also sent as the `Location` header); null when none has one',
  })
  location: string | null;

  @ApiProperty({ type: [IdempotencyRecordResponse], description: 'One record per operation the key was used for, oldest first' })
  records: IdempotencyRecordResponse[];
}

export class ReleaseKeyResponse {
  @ApiProperty({
    enum: Object.keys(DECISIONS),
    example: 'abandoned',
    description:
      '`completed` or `abandoned`: the reaper finished the attempt; `lost_lease`: someone else took it first; `error`: it could not reconcile and gave the key back; `skipped`: no reconciler for the operation',
  })
  decision: string;
}

/** The answer to `POST /v1/idempotency-keys/{key}/cancel`, the same on every repeat. */
export class CancelKeyResponse {
  @ApiProperty({ example: '8e0f3b1c-6f0e-4c39-9d55-2d3c1f0a7b21' })
  key: string;

  @ApiProperty({ example: 'orders.create' })
  operation: string;

  @ApiProperty({ enum: ['canceled'], example: 'canceled' })
  status: 'canceled';

  @ApiProperty({
    enum: CANCEL_OUTCOMES,
    example: 'refunded',
    description:
      '`never_run`: nothing ran under the key (no request, or an attempt abandoned with nothing charged); ' +
      '`canceled_before_charge`: an attempt in flight was stopped and its charge key canceled at the provider, the order failed; ' +
      '`refunded`: the order was charged, and what was left of it was refunded; `voided`: the order was authorized (manual capture), ' +
      'and the authorization was voided; `nothing_to_undo`: the attempt had ended with nothing to undo (a declined card, money already given back); ' +
      '`refund_failed`: a repeat after the refund the cancel made (or found) failed late at the provider - the order is charged again, ' +
      'the key stays canceled; refund the order by its id to give the money back',
  })
  outcome: CancelOutcome;

  @ApiProperty({ required: false, example: 'ord_3b1c5e7a9d0f2b4c6e8a0d1f', description: 'The order the key created, when it created one' })
  orderId?: string;

  @ApiProperty({
    required: false,
    example: 'rfd_3b1c5e7a9d0f2b4c6e8a0d1f',
    description: 'The full refund the cancel made (`refunded` only)',
  })
  refundId?: string;

  @ApiProperty({ ...DATE_TIME, description: 'When the key was canceled' })
  canceledAt: string;
}
