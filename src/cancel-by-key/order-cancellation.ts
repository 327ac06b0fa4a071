import { Injectable, type OnModuleInit } from '@nestjs/common';
import {
  type CancelSettlement,
  type CancelSituation,
  type CancellationView,
  type Canceler,
  IdempotencyAdminService,
  IdempotencyCancellation,
  IdempotencyKeyInUseError,
  IdempotencyKeyNotFoundError,
  IdempotencyKeyReusedError,
  type Lease,
} from '@idempotent-orders/nest-idempotency';
import { DomainError } from '../common/domain-error.js';
import { AsyncSettlement } from '../async-payments/async-settlement.js';
import { VOID_ORDER_OPERATION } from '../capture-void/capture-void.js';
import { CaptureVoidService } from '../capture-void/capture-void.service.js';
import { OrderNotVoidableError } from '../capture-void/capture-void.errors.js';
import { REFUNDABLE_STATES } from '../orders/order-state.js';
import { OrderWorkflow } from '../orders/order-workflow.js';
import { orderIdForClaim, type Order } from '../orders/order.js';
import { OrderRepository } from '../orders/order.repository.js';
import { CREATE_ORDER_OPERATION } from '../orders/orders.service.js';
import { RefundNotFoundError } from '../refunds/refunds.errors.js';
import { REFUND_OPERATION, RefundsService } from '../refunds/refunds.service.js';

/** A finished cancel whose refund, or the refunds it found, failed at the provider afterwards: the order is charged again. */
export const REFUND_FAILED = 'refund_failed';

/** The reason the cancel's refund carries. */
export const CANCEL_REFUND_REASON = 'key_canceled';

/** A void refused because the authorization is gone already (lapsed, voided, or captured - then a refund's business). */
const GONE_AUTHORIZATION = new Set(['authorization_expired', 'authorization_voided']);

/** The undo refund's claim refused on money that moved after the cancel read the order (nothing written). */
const RACED_REFUSALS = new Set(['refund_in_flight', 'refund_exceeds_captured', 'order_not_refundable']);

/** How soon a cancel of a payment the provider is still processing is worth repeating (such methods settle in hours or days). */
const STILL_PROCESSING_RETRY_AFTER_SECONDS = 60;

/**
 * The key holds money the cancel cannot give back (an undo refund recorded
 * by an earlier release under another request): the key stays held by the
 * cancel (every create under it is refused) until a human settles it.
 */
export class CancelUndoUnavailableError extends DomainError {
  readonly code = 'cancel_undo_unavailable';
  constructor(what: string) {
    super(
      `This key's order ${what}, which cannot be undone here yet: the key refuses new requests, but nothing was given back. Repeat the cancel once it can be.`,
    );
  }
}

/**
 * Money of the key's order is still moving - a refund pending at the
 * provider, or released into its resume window - so what is left to undo is
 * not known yet: a reservation is not money given back. Nothing settled; the
 * key stays held. Repeat the same cancel after Retry-After.
 */
export class CancelInProgressError extends DomainError {
  readonly code = 'cancel_in_progress';
  constructor(what: string, retryAfterSeconds = 1) {
    super(`${what}; the cancel settles once that money is final. Repeat the cancel.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The provider (or the refund's own rules) refused the cancel's refund: the key stays held, the refund's answer says why. */
export class CancelRefundRefusedError extends DomainError {
  readonly code = 'cancel_refund_refused';
  constructor(status: number, refusal: string) {
    super(
      `The refund that undoes this key's order was refused (${status} ${refusal}); the key refuses new requests, nothing was given back.`,
    );
    this.extensions = { refundStatus: status, refundCode: refusal };
  }
}

/**
 * Cancel by key for `orders.create` (POST /v1/idempotency-keys/:key/cancel):
 * an attempt in flight is reconciled exactly as the reaper does it (the
 * provider's chargeOrCancel: the charge key is canceled unless a charge
 * exists, which is then saved); a charge still processing at the provider
 * is settled by asking it (canceled there if it is still processing); a
 * charged order is refunded in full (what is left of it), an authorization
 * voided, each under the cancel's undo key;
 * a key that never ran, or ran to a declined card, has nothing to undo.
 */
@Injectable()
export class OrderCancellation implements Canceler, OnModuleInit {
  constructor(
    private readonly cancellation: IdempotencyCancellation,
    private readonly workflow: OrderWorkflow,
    private readonly orders: OrderRepository,
    private readonly settlement: AsyncSettlement,
    private readonly actions: CaptureVoidService,
    private readonly refunds: RefundsService,
    private readonly admin: IdempotencyAdminService,
  ) {}

  onModuleInit(): void {
    this.cancellation.register(CREATE_ORDER_OPERATION, this);
  }

  /** The same path as the reaper: never charges, cancels the charge key unless a charge exists. */
  async stop(lease: Lease): Promise<void> {
    await this.workflow.advance(lease, 'reconcile');
  }

  async settle(situation: CancelSituation): Promise<CancelSettlement> {
    if (!situation.attempt) return { outcome: 'never_run' };
    const { tenant, claimId, undoKey } = situation.attempt;
    let order = await this.orders.findForTenant(tenant, orderIdForClaim(claimId));
    if (!order) return { outcome: situation.state === 'answered' ? 'nothing_to_undo' : 'never_run' };
    const found = { location: `/v1/orders/${order._id}`, references: { orderId: order._id } };
    if (situation.state === 'never_run') return { outcome: 'never_run', ...found };
    if (situation.state === 'stopped') return { outcome: 'canceled_before_charge', ...found };
    // Money still moving at the provider (an asynchronous payment): its outcome now, or the charge canceled there.
    if (order.state === 'processing') {
      await this.settlement.resolveWithProvider(order, { schedule: false });
      order = (await this.orders.findForTenant(tenant, order._id)) ?? order;
      if (order.state === 'failed') return { outcome: 'canceled_before_charge', ...found };
    }
    if (order.state === 'authorized' || (order.state === 'voided' && (await this.ownAnswer(tenant, undoKey, VOID_ORDER_OPERATION)))) {
      const voided = await this.void(tenant, order, undoKey);
      if (voided) return { outcome: 'voided', ...found };
    }
    if (REFUNDABLE_STATES.includes(order.state) || order.state === 'refunded') {
      const refundId = await this.refund(tenant, order, undoKey);
      if (refundId) return { outcome: 'refunded', location: found.location, references: { orderId: order._id, refundId } };
    }
    // Still processing after the provider was asked (it cannot cancel this method while processing, e.g. a bank
    // transfer): money may still arrive, so nothing is final to undo yet - the same retryable wait as a refund in flight.
    if (order.state === 'processing') {
      throw new CancelInProgressError(
        "This key's payment is still being processed by the provider, which cannot cancel it",
        STILL_PROCESSING_RETRY_AFTER_SECONDS,
      );
    }
    // A declined card (the stored 402), or money already given back (voided, expired, refunded by others): nothing to undo.
    return { outcome: 'nothing_to_undo', ...found };
  }

  /**
   * A finished cancel's answer follows the money it relied on: a card refund
   * `succeeded` at Stripe can still fail days later (refund.failed puts the
   * money back and the order is charged again). Then the cancel's `refunded`
   * (its own refund failed, or a refund by id it left out as already given
   * back) or `nothing_to_undo` (others' refunds failed) is no longer true, and every repeat answers `refund_failed`: the order
   * is charged, the key stays canceled, and the money goes back by a refund
   * of the order by its id (docs/api/cancel-by-key.md).
   */
  async current(view: CancellationView, tenant: string): Promise<CancellationView> {
    const orderId = view.references.orderId;
    if (!orderId || (view.outcome !== 'refunded' && view.outcome !== 'nothing_to_undo')) return view;
    const order = await this.orders.findForTenant(tenant, orderId);
    if (!order) return view;
    // Final money only, as settle() decides: a refund still in flight is not money given back. Once others gave
    // it all back (a refund by id after the failure, as the docs advise), no refund failed that still matters.
    if (order.capturedMinor <= order.refundedMinor) return view;
    const refundId = view.references.refundId;
    // A store error surfaces (503) rather than answering from a guess; only a refund that is not there counts as not failed.
    const own = refundId ? await this.refunds.get(tenant, orderId, refundId).catch(notFoundAsNull) : null;
    if (refundId && !own) return view;
    // Charged with no refund in flight to give it back: the cancel's own refund failed, or one by id that it
    // counted on for the rest did (its refund was only the rest). A refund in flight is not final: wait for it.
    const inFlight = order.capturedMinor - order.refundedMinor - order.refundableMinor > 0;
    const failed = !refundId || own?.state === 'failed' || !inFlight;
    return failed ? { ...view, outcome: REFUND_FAILED } : view;
  }

  /**
   * A full refund: what is left to refund of the order, decided on final
   * money only (refundedMinor against capturedMinor), never on reservations.
   * The cancel's own refund under the undo key, in any status, comes first: a
   * finished one is the answer, one in flight is resumed by its key (or is
   * busy elsewhere: 409 cancel_in_progress). Another refund in flight: 409,
   * the rest is not known until it is final. Null when others gave it all back.
   */
  private async refund(tenant: string, order: Order, undoKey: string): Promise<string | null> {
    const own = await this.ownRecord(tenant, undoKey, REFUND_OPERATION);
    if (own?.status === 'complete' && own.location) return own.location.split('/').pop()!;
    if (own?.status !== 'pending') {
      const reserved = order.capturedMinor - order.refundedMinor - order.refundableMinor;
      if (reserved > 0) throw new CancelInProgressError(`A refund of ${reserved} minor units of this key's order is still in flight`);
      if (order.refundedMinor >= order.capturedMinor) return null;
    }
    const result = await this.refunds.refundRestByKey(tenant, order._id, undoKey, CANCEL_REFUND_REASON).catch((error: unknown) => {
      throw undoError(error);
    });
    const body = JSON.parse(result.response.body) as { id?: string; code?: string };
    if (result.response.status !== 201 || !body.id) throw new CancelRefundRefusedError(result.response.status, body.code ?? 'unknown');
    return body.id;
  }

  /** The authorization voided under the undo key (a repeat replays the void's stored answer); false when it had lapsed or gone already. */
  private async void(tenant: string, order: Order, undoKey: string): Promise<boolean> {
    const result = await this.actions.voidByKey(tenant, order._id, undoKey).catch((error: unknown) => {
      throw undoVoidError(error);
    });
    if (result.response.status === 200) return true;
    const body = JSON.parse(result.response.body) as { code?: string };
    if (body.code && GONE_AUTHORIZATION.has(body.code)) return false;
    throw new CancelRefundRefusedError(result.response.status, body.code ?? 'unknown');
  }

  /** The stored answer of this cancel's own undo (a refund or a void under the undo key), if one finished. */
  private async ownAnswer(tenant: string, undoKey: string, operation: string): Promise<{ location: string | null } | null> {
    const record = await this.ownRecord(tenant, undoKey, operation);
    return record?.status === 'complete' ? { location: record.location } : null;
  }

  /** This cancel's own undo under the undo key, in whatever status (the latest attempt), or null when it never ran. */
  private async ownRecord(tenant: string, undoKey: string, operation: string): Promise<{ status: string; location: string | null } | null> {
    const view = await this.admin.describe(tenant, undoKey).catch((error: unknown) => {
      if (error instanceof IdempotencyKeyNotFoundError) return null;
      throw error;
    });
    const records = view?.records.filter((candidate) => candidate.operation === operation) ?? [];
    const record = records.find((candidate) => candidate.status === 'complete') ?? records.at(-1);
    return record ? { status: record.status, location: record.location } : null;
  }
}

/**
 * The undo void's refusals in its claim, in the cancel's words: the order was
 * read authorized, so a void refused now met a capture or void of the order
 * in flight (or one that finished meanwhile), and the cancel's own void busy
 * elsewhere is in flight too. Money is still moving: the repeat decides again
 * once it is final (a capture that succeeded is then refunded). Never the
 * capture module's final `order_not_voidable` for a key the client asked to undo.
 */
function undoVoidError(error: unknown): unknown {
  if (error instanceof IdempotencyKeyInUseError) {
    return new CancelInProgressError("This key's undo void is in flight", error.retryAfterSeconds ?? 1);
  }
  if (error instanceof OrderNotVoidableError) return new CancelInProgressError("A capture or void of this key's order is in flight");
  return error;
}

/**
 * The undo refund's own refusals, in the cancel's words: its key is the
 * cancel's, never the client's, so none may reach the client as a 409
 * idempotency_key_in_use or a 422 idempotency_key_reused about it.
 */
function notFoundAsNull(error: unknown): null {
  if (error instanceof RefundNotFoundError) return null;
  throw error;
}

function undoError(error: unknown): unknown {
  if (error instanceof IdempotencyKeyInUseError) {
    return new CancelInProgressError("This key's undo refund is in flight", error.retryAfterSeconds ?? 1);
  }
  if (error instanceof DomainError && RACED_REFUSALS.has(error.code)) {
    // Another refund reserved meanwhile, or took the rest: what is left is decided again, on final money, by the repeat.
    return new CancelInProgressError("Another refund of this key's order is in flight");
  }
  if (error instanceof IdempotencyKeyReusedError) {
    // Only an undo refund stored by an earlier release (its fingerprint held an amount) can differ: for a human.
    return new CancelUndoUnavailableError('has an undo refund recorded by an earlier release under another request');
  }
  return error;
}
