import { Logger } from '@nestjs/common';
import Stripe from 'stripe';
import { Clock } from '../common/clock.js';
import {
  PaymentGateway,
  PaymentProviderUnavailableError,
  type AsyncChargeResult,
  type Authorization,
  type AuthorizeResult,
  type CaptureRequest,
  type ChargeRequest,
  type ChargeResult,
  type OperationResult,
  type ReconcileResult,
  type RefundRequest,
  type VoidRequest,
} from '../payments/payment-gateway.port.js';
import { StripeIdempotencyKeyMisuseError, StripeServerError, StripeUnexpectedAnswerError } from './stripe.errors.js';
import type { JournalEntry, JournaledCall, StripeRequestJournal } from './stripe-request.journal.js';
import type { StripeSettings } from './stripe.settings.js';
import { keyStep, withinKeyWindow, type KeyCaller } from './key-window.js';
import { stripeAmountRefusal } from './stripe-amounts.js';
import {
  asyncMethodOf,
  authorizationRefusal,
  captureBeforeOf,
  describe,
  intentParams,
  journaledByEarlierRelease,
  refundOutcome,
  refundRefusal,
  succeeded,
  toAuthorization,
  toCharge,
  tombstoneParams,
  type Answer,
} from './stripe-answers.js';

/** The API version this adapter was written and tested against; the SDK sends it on every call (Stripe-Version). */
export const STRIPE_API_VERSION = '2026-10-28.endive' as const;

/** Keys derived by this service: nothing that could break out of a search query's quotes. */
const SEARCHABLE_KEY = /^[A-Za-z0-9_:.-]{1,200}$/;

type Intent = Stripe.PaymentIntent;
/**
 * The payment gateway port on Stripe (PaymentIntents and Refunds, official
 * SDK, API version pinned). Every call goes out under the key the caller
 * derived, as Stripe's `Idempotency-Key`, and is journaled first
 * (stripe-request.journal.ts) so that reconciliation can replay it.
 *
 * What each Stripe answer means here:
 * - 402 `card_error`: declined (Stripe stores it under the key: a replay answers the same);
 * - connection errors, 5xx, 429, 409 (`idempotency_key_in_use`, lock
 *   timeouts): transient - PaymentProviderUnavailableError, a 503 with
 *   Retry-After, the record stays resumable and the retry reuses the key;
 * - 400 `idempotency_error`: the key was used for another request. Either
 *   reconciliation canceled the key (it bound the key to a tombstone, see
 *   cancelAtStripe) - answered `canceled` - or our key derivation is wrong:
 *   StripeIdempotencyKeyMisuseError, loud, never retried under a new key;
 * - other 400s of a capture, void or refund: a refusal, mapped from Stripe's
 *   code and the PaymentIntent's state.
 *
 * Stripe forgets a key after 24 hours: past that window a send under it
 * would move money again. Which of send, look up or cancel a key gets, by
 * its journal entry's age and who asks (a request or the reaper), is one
 * rule in key-window.ts; settleCharge and settleOperation follow it.
 *
 * Cancel by key, which Stripe does not offer: reconciliation sends a
 * harmless request under the key (an unconfirmed PaymentIntent with
 * `metadata.tombstone_for`). If Stripe accepts it, nothing had been sent
 * under the key and nothing ever can be while Stripe keeps it (24 h); the
 * tombstone is canceled and the journal says so. If Stripe answers
 * `idempotency_error`, the original request arrived: it is replayed, same
 * key, same parameters, for its answer.
 */
export class StripePaymentGateway extends PaymentGateway {
  private readonly logger = new Logger(StripePaymentGateway.name);

  constructor(
    private readonly stripe: Stripe,
    private readonly journal: StripeRequestJournal,
    private readonly clock: Clock,
    private readonly settings: Pick<StripeSettings, 'retryAfterSeconds'>,
    private readonly metrics: StripeMetrics = { observe: () => undefined },
  ) {
    super();
  }

  async charge(request: ChargeRequest): Promise<ChargeResult> {
    const found = await this.openIntent(request, 'charge');
    switch (found.outcome) {
      case 'charged':
        return { outcome: 'succeeded', charge: found.charge };
      case 'authorized':
        throw new StripeUnexpectedAnswerError(`charge key ${request.chargeKey} holds an authorization, not a charge`);
      default:
        return found;
    }
  }

  async authorize(request: ChargeRequest): Promise<AuthorizeResult> {
    const found = await this.openIntent(request, 'authorize');
    switch (found.outcome) {
      case 'authorized':
        return found;
      case 'declined':
      case 'canceled':
        return found;
      default:
        throw new StripeUnexpectedAnswerError(`charge key ${request.chargeKey} answered ${found.outcome} to an authorization`);
    }
  }

  override amountRefusal(amountMinor: number, currency: string): string | null {
    return stripeAmountRefusal(amountMinor, currency);
  }

  async chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    return this.settleCharge(await this.journal.openOrGet(this.tombstoneEntry(chargeKey, null)), 'reaper');
  }

  async processingOrCancel(chargeKey: string): Promise<AsyncChargeResult> {
    const intent = await this.findIntent(chargeKey);
    if (!intent) return { outcome: 'canceled' };
    let current = intent;
    // requires_capture: an authorization under a key whose order waits in `processing` (a manual create the reaper found
    // processing while it waited on the customer): nobody will capture it, so it is released - never still_processing forever.
    if (['processing', 'requires_action', 'requires_confirmation', 'requires_capture'].includes(current.status)) {
      // One cancel key per status it is sent from: Stripe keeps a refusal (400, with the intent as it was) under its key
      // for 24 h, so a key shared by every look would answer a processing payment's refusal to the authorization it
      // became - kept, still_processing, for a day. The same status again is the same request, and its replay holds.
      const idempotencyKey = `${chargeKey}:expire:${current.status}`;
      const canceled = await this.call('payment_intents.cancel', 'cancel', idempotencyKey, () =>
        this.stripe.paymentIntents.cancel(current.id, { cancellation_reason: 'abandoned' }, { idempotencyKey }),
      );
      // Stripe cannot cancel most payments once processing: the answer is the intent as it stands - the one just
      // read, unless the refusal shows it moved on since (a replayed refusal carries the intent of its first day).
      if ('invalid' in canceled && canceled.invalid.payment_intent) {
        const refusedAt = canceled.invalid.payment_intent;
        if (refusedAt.status !== current.status) current = refusedAt;
      } else if ('ok' in canceled) current = canceled.ok;
      else throw new StripeUnexpectedAnswerError(`cancel of ${current.id}: ${describe(canceled)}`);
    }
    const outcome = this.intentOutcome(current);
    switch (outcome.outcome) {
      case 'charged':
        return { outcome: 'succeeded', charge: outcome.charge };
      case 'declined':
      case 'canceled':
        return outcome;
      default:
        // Still processing and Stripe would not cancel it: money may still arrive - the order keeps waiting, under its method's bound.
        return { outcome: 'still_processing', method: asyncMethodOf(current) };
    }
  }

  async capture(request: CaptureRequest): Promise<OperationResult> {
    const intent = await this.findIntent(request.chargeKey);
    if (!intent) return { outcome: 'refused', reason: 'no_such_payment' };
    return this.operate(request.captureKey, request.chargeKey, {
      kind: 'capture',
      intentId: intent.id,
      params: { amount_to_capture: request.amountMinor, metadata: { capture_key: request.captureKey } },
    });
  }

  async void(request: VoidRequest): Promise<OperationResult> {
    const intent = await this.findIntent(request.chargeKey);
    if (!intent) return { outcome: 'refused', reason: 'no_such_payment' };
    return this.operate(request.voidKey, request.chargeKey, {
      kind: 'void',
      intentId: intent.id,
      params: { cancellation_reason: 'requested_by_customer' },
    });
  }

  async refund(request: RefundRequest): Promise<OperationResult> {
    const intent = await this.findIntent(request.chargeKey);
    if (!intent) return { outcome: 'refused', reason: 'no_such_payment' };
    return this.operate(request.refundKey, request.chargeKey, {
      kind: 'refund',
      params: {
        payment_intent: intent.id,
        amount: request.amountMinor,
        metadata: { refund_key: request.refundKey, charge_key: request.chargeKey },
      },
    });
  }

  async operationOrCancel(key: string): Promise<OperationResult> {
    return this.settleOperation(await this.journal.openOrGet(this.tombstoneEntry(key, null)), 'reaper');
  }

  // --- charges -------------------------------------------------------------

  private async openIntent(request: ChargeRequest, kind: 'charge' | 'authorize'): Promise<ReconcileResult> {
    const call: JournaledCall = { kind, params: intentParams(request, kind) };
    const entry = await this.journal.openOrGet({
      _id: request.chargeKey,
      call,
      chargeKey: request.chargeKey,
      firstSentAt: this.clock.now(),
      objectId: null,
    });
    if (entry.call.kind === 'canceled') return { outcome: 'canceled' };
    if (entry.call.kind !== kind) throw new StripeUnexpectedAnswerError(`charge key ${request.chargeKey} was used for ${entry.call.kind}`);
    return this.settleCharge({ ...entry, call: journaledByEarlierRelease(entry.call, call) ? entry.call : call }, 'request');
  }

  /**
   * The charge under a journaled key, by the key window's rule (key-window.ts)
   * for whoever asks; an authorization with its real capture deadline, so the
   * request, the reaper and a cancel by key all see the same one.
   */
  private async settleCharge(entry: JournalEntry, caller: KeyCaller): Promise<ReconcileResult> {
    const result = await this.chargeUnderKey(entry, caller);
    return result.outcome === 'authorized' ? { ...result, authorization: await this.withCaptureDeadline(result.authorization) } : result;
  }

  private async chargeUnderKey(entry: JournalEntry, caller: KeyCaller): Promise<ReconcileResult> {
    const next = keyStep(entry, this.clock.now(), caller);
    switch (next.step) {
      case 'canceled':
        return { outcome: 'canceled' };
      case 'send':
        return this.replayIntent(entry);
      case 'cancel':
        return (await this.cancelAtStripe(entry._id)) ? { outcome: 'canceled' } : this.replayIntent(entry);
      case 'look_up': {
        // Past the key window the search index has long caught up (its lag is under a minute): not found means never created.
        const intent = await this.lookUpIntent(entry);
        if (intent) return this.intentOutcome(intent);
        const reread = await this.pastWindowWithNothing(entry, next.ifNothing);
        return reread
          ? this.chargeUnderKey({ ...reread, call: reread.call.kind === 'canceled' ? reread.call : entry.call }, caller)
          : this.replayIntent(entry);
      }
    }
  }

  /**
   * Past the window, nothing at Stripe: the reaper cancels the key, a request
   * restarts its window and sends (null: go on and send). When another caller
   * changed the entry first, the entry as it is now, to follow instead.
   */
  private async pastWindowWithNothing(entry: JournalEntry, ifNothing: 'send' | 'cancel'): Promise<JournalEntry | null> {
    const changed =
      ifNothing === 'cancel'
        ? await this.journal.canceled(entry._id, entry.firstSentAt)
        : await this.journal.restarted(entry._id, entry.firstSentAt, this.clock.now());
    if (changed) return ifNothing === 'cancel' ? { ...entry, call: { kind: 'canceled' } } : null;
    const now = await this.journal.find(entry._id);
    if (!now || !withinKeyWindow(now, this.clock.now()))
      throw new StripeUnexpectedAnswerError(`journal entry ${entry._id} changed under us`);
    return now;
  }

  /** The create of the journaled PaymentIntent under its key: the first answer, whoever asks and however often. */
  private async replayIntent(entry: JournalEntry): Promise<ReconcileResult> {
    const key = entry._id;
    const call = entry.call as Extract<JournaledCall, { kind: 'charge' | 'authorize' }>;
    let answer: Answer<Intent>;
    try {
      answer = await this.call('payment_intents.create', 'charge', key, () =>
        this.stripe.paymentIntents.create(call.params as never, { idempotencyKey: key }),
      );
    } catch (error) {
      // A 5xx is stored under the key too (Stripe replays it for 24 h), even when the money moved before it:
      // the PaymentIntent's metadata is the way to it. Not searchable yet (its lag): still unavailable, retry.
      if (!(error instanceof StripeServerError)) throw error;
      const intent = await this.searchIntent(key);
      if (!intent) throw error;
      answer = { ok: intent };
    }
    if ('canceled' in answer) return { outcome: 'canceled' };
    if ('card' in answer) return { outcome: 'declined', reason: answer.card.code ?? 'card_declined' };
    if ('invalid' in answer) throw new StripeUnexpectedAnswerError(`create under ${key}: ${describe(answer)}`);
    await this.journal.learned(key, answer.ok.id).catch(() => undefined);
    return this.intentOutcome(answer.ok);
  }

  /**
   * The authorization's real deadline: Stripe gives it on the card charge
   * (payment_method_details.card.capture_before), which the PaymentIntent
   * holds only expanded - a read, so never part of the keyed create. Some
   * networks and merchant-initiated payments lapse before 7 days. When the
   * read fails or shows none, the 7-day default stands (a capture after the
   * real lapse is then refused authorization_expired, as before).
   */
  private async withCaptureDeadline(authorization: Authorization): Promise<Authorization> {
    const got = await this.call('payment_intents.retrieve', 'charge', authorization.chargeKey, () =>
      this.stripe.paymentIntents.retrieve(authorization.id, { expand: ['latest_charge'] }),
    ).catch(() => null);
    const captureBefore = got && 'ok' in got ? captureBeforeOf(got.ok) : null;
    return captureBefore ? { ...authorization, expiresAt: captureBefore } : authorization;
  }

  private intentOutcome(intent: Intent): ReconcileResult {
    const key = intent.metadata?.charge_key ?? '';
    switch (intent.status) {
      case 'succeeded':
        return { outcome: 'charged', charge: toCharge(intent, key) };
      case 'requires_capture':
        return { outcome: 'authorized', authorization: toAuthorization(intent, key) };
      case 'processing':
      case 'requires_action':
      case 'requires_confirmation':
        return { outcome: 'processing' };
      case 'canceled':
        return { outcome: 'canceled' };
      case 'requires_payment_method':
        return { outcome: 'declined', reason: intent.last_payment_error?.code ?? 'card_declined' };
      default:
        throw new StripeUnexpectedAnswerError(`PaymentIntent ${intent.id} in status ${intent.status}`);
    }
  }

  /**
   * The PaymentIntent under a charge key: by the id the journal learned (a
   * strongly consistent retrieve), else by replaying the journaled create
   * inside the key window, else by metadata search (past the window the
   * search index has caught up).
   */
  private async findIntent(chargeKey: string): Promise<Intent | null> {
    const entry = await this.journal.find(chargeKey);
    if (!entry || entry.call.kind === 'canceled') return withinKeyWindow(entry, this.clock.now()) ? null : this.searchIntent(chargeKey);
    if (!withinKeyWindow(entry, this.clock.now())) return this.lookUpIntent(entry);
    const byId = await this.retrieveLearned(entry);
    if (byId) return byId;
    const call = entry.call as Extract<JournaledCall, { kind: 'charge' | 'authorize' }>;
    const answer = await this.call('payment_intents.create', 'charge', chargeKey, () =>
      this.stripe.paymentIntents.create(call.params as never, { idempotencyKey: chargeKey }),
    );
    if ('ok' in answer) return answer.ok;
    if ('card' in answer) return answer.card.payment_intent ?? null;
    return null;
  }

  /** The PaymentIntent under a key without sending under it: by the id the journal learned, else by metadata search. */
  private async lookUpIntent(entry: JournalEntry): Promise<Intent | null> {
    return (await this.retrieveLearned(entry)) ?? this.searchIntent(entry._id);
  }

  private async retrieveLearned(entry: JournalEntry): Promise<Intent | null> {
    if (!entry.objectId) return null;
    const got = await this.call('payment_intents.retrieve', 'charge', entry._id, () =>
      this.stripe.paymentIntents.retrieve(entry.objectId!),
    );
    return 'ok' in got ? got.ok : null;
  }

  private async searchIntent(chargeKey: string): Promise<Intent | null> {
    if (!SEARCHABLE_KEY.test(chargeKey)) throw new StripeUnexpectedAnswerError(`charge key ${chargeKey} cannot be searched`);
    const found = await this.call('payment_intents.search', 'charge', chargeKey, () =>
      this.stripe.paymentIntents.search({ query: `metadata['charge_key']:'${chargeKey}'`, limit: 10 }),
    );
    if (!('ok' in found)) throw new StripeUnexpectedAnswerError(`search for ${chargeKey}: ${describe(found)}`);
    const intents = found.ok.data.filter((intent) => intent.metadata?.charge_key === chargeKey);
    if (intents.length > 1) throw new StripeUnexpectedAnswerError(`${intents.length} PaymentIntents carry charge key ${chargeKey}`);
    return intents[0] ?? null;
  }

  // --- capture, void, refund -----------------------------------------------

  private async operate(key: string, chargeKey: string, call: JournaledCall): Promise<OperationResult> {
    const entry = await this.journal.openOrGet({ _id: key, call, chargeKey, firstSentAt: this.clock.now(), objectId: null });
    if (entry.call.kind === 'canceled') return { outcome: 'canceled' };
    if (entry.call.kind !== call.kind) throw new StripeUnexpectedAnswerError(`key ${key} was used for ${entry.call.kind}`);
    return this.settleOperation(entry, 'request');
  }

  /** The operation under a journaled key, by the key window's rule (key-window.ts) for whoever asks. */
  private async settleOperation(entry: JournalEntry, caller: KeyCaller): Promise<OperationResult> {
    const next = keyStep(entry, this.clock.now(), caller);
    if (next.step === 'canceled') return { outcome: 'canceled' };
    const [key, chargeKey, call] = [entry._id, entry.chargeKey!, entry.call as JournaledCall];
    if (next.step === 'send') return this.send(key, chargeKey, call, caller);
    if (next.step === 'cancel') return (await this.cancelAtStripe(key)) ? { outcome: 'canceled' } : this.send(key, chargeKey, call, caller);
    // Past the window a replay would be a new request: what the payment shows is the answer.
    const found = await this.findOperation(key, chargeKey, call);
    if (found) return found;
    const reread = await this.pastWindowWithNothing(entry, next.ifNothing);
    return reread
      ? this.settleOperation({ ...reread, call: reread.call.kind === 'canceled' ? reread.call : call }, caller)
      : this.send(key, chargeKey, call, caller);
  }

  /**
   * The operation under its key. A 5xx is stored by Stripe under the key and
   * replayed for 24 h, even when the money moved before it: the operation is
   * then looked up on the payment (its refunds list, the intent's state and
   * our metadata), as past the window. For the reaper, when Stripe REPLAYED
   * a stored 5xx and the look-up finds nothing, nothing was done and nothing
   * can be under the key (it is bound to that answer): the key is canceled
   * instead of blocking the operation until the window ends. Anything else
   * keeps the 503 (retry).
   */
  private async send(
    key: string,
    chargeKey: string,
    call: JournaledCall,
    caller: 'request' | 'reaper' = 'request',
  ): Promise<OperationResult> {
    try {
      return await this.sendOnce(key, chargeKey, call);
    } catch (error) {
      if (!(error instanceof StripeServerError)) throw error;
      const found = await this.findOperation(key, chargeKey, call);
      if (found) return found;
      if (caller !== 'reaper' || !error.replayed) throw error;
      await this.journal.canceled(key);
      return { outcome: 'canceled' };
    }
  }

  private async sendOnce(key: string, chargeKey: string, call: JournaledCall): Promise<OperationResult> {
    const options = { idempotencyKey: key };
    switch (call.kind) {
      case 'capture': {
        const answer = await this.call('payment_intents.capture', 'capture', key, () =>
          this.stripe.paymentIntents.capture(call.intentId, call.params as never, options),
        );
        if ('ok' in answer) return succeeded(key, 'capture', chargeKey, answer.ok.latest_charge, answer.ok, answer.ok.amount_received);
        if ('canceled' in answer) return { outcome: 'canceled' };
        return { outcome: 'refused', reason: authorizationRefusal(answer) };
      }
      case 'void': {
        const answer = await this.call('payment_intents.cancel', 'void', key, () =>
          this.stripe.paymentIntents.cancel(call.intentId, call.params as never, options),
        );
        if ('ok' in answer) return succeeded(key, 'void', chargeKey, null, answer.ok, answer.ok.amount);
        if ('canceled' in answer) return { outcome: 'canceled' };
        return { outcome: 'refused', reason: authorizationRefusal(answer) };
      }
      case 'refund': {
        const answer = await this.call('refunds.create', 'refund', key, () => this.stripe.refunds.create(call.params as never, options));
        if ('ok' in answer) {
          const refund = answer.ok;
          await this.journal.learned(key, refund.id).catch(() => undefined);
          return refundOutcome(refund, key, chargeKey);
        }
        if ('canceled' in answer) return { outcome: 'canceled' };
        return { outcome: 'refused', reason: refundRefusal(answer) };
      }
      default:
        throw new StripeUnexpectedAnswerError(`key ${key} journals a ${call.kind}, not an operation`);
    }
  }

  /**
   * What the payment shows of the operation under `key`, by what Stripe
   * keeps with it (strongly consistent reads, no search): a refund carrying
   * our refund_key in the intent's refunds list, a capture by the intent's
   * capture_key, a void by the intent canceled as we cancel. Null: nothing
   * done under the key; `refused` no_such_payment: no payment to look on.
   */
  private async findOperation(key: string, chargeKey: string, call: JournaledCall): Promise<OperationResult | null> {
    const intent = await this.findIntent(chargeKey);
    if (!intent) return { outcome: 'refused', reason: 'no_such_payment' };
    return this.operationShownBy(intent, key, chargeKey, call);
  }

  /**
   * The operation under `key` as the payment shows it, without its key: a
   * refund carries our key in its metadata (listed by PaymentIntent,
   * strongly consistent, unlike search), a capture leaves it in the
   * PaymentIntent's metadata, a void is the PaymentIntent canceled at our
   * request. Null: the payment shows no such operation.
   */
  private async operationShownBy(intent: Intent, key: string, chargeKey: string, call: JournaledCall): Promise<OperationResult | null> {
    if (call.kind === 'refund') {
      const listed = await this.call('refunds.list', 'refund', key, () =>
        this.stripe.refunds.list({ payment_intent: intent.id, limit: 100 }),
      );
      if (!('ok' in listed)) throw new StripeUnexpectedAnswerError(`refunds of ${intent.id}: ${describe(listed)}`);
      const refund = listed.ok.data.find((candidate) => candidate.metadata?.refund_key === key);
      return refund ? refundOutcome(refund, key, chargeKey) : null;
    }
    if (call.kind === 'capture' && intent.status === 'succeeded' && intent.metadata?.capture_key === key) {
      return succeeded(key, 'capture', chargeKey, intent.latest_charge, intent, intent.amount_received);
    }
    if (call.kind === 'void' && intent.status === 'canceled' && intent.cancellation_reason === 'requested_by_customer') {
      return succeeded(key, 'void', chargeKey, null, intent, intent.amount);
    }
    return null;
  }

  // --- cancel by key ---------------------------------------------------------

  private tombstoneEntry(key: string, chargeKey: string | null): JournalEntry {
    return { _id: key, call: { kind: 'canceled' }, chargeKey, firstSentAt: this.clock.now(), objectId: null };
  }

  /**
   * Binds the key at Stripe to a tombstone if nothing was sent under it yet.
   * True: the key is now the tombstone's (canceled, and the journal says
   * so); false: the key carries another request (Stripe's 400
   * idempotency_error), which the caller replays for its answer.
   */
  private async cancelAtStripe(key: string): Promise<boolean> {
    const answer = await this.call(
      'payment_intents.create',
      'cancel',
      key,
      () => this.stripe.paymentIntents.create(tombstoneParams(key), { idempotencyKey: key }),
      {
        idempotencyErrorIsAnswer: true,
      },
    );
    if (answer === IDEMPOTENCY_ERROR) return false;
    if (!('ok' in answer)) throw new StripeUnexpectedAnswerError(`tombstone under ${key}: ${describe(answer)}`);
    if (answer.ok.status !== 'canceled') {
      await this.call('payment_intents.cancel', 'cancel', `${key}:tombstone`, () =>
        this.stripe.paymentIntents.cancel(answer.ok.id, { cancellation_reason: 'abandoned' }, { idempotencyKey: `${key}:tombstone` }),
      );
    }
    await this.journal.canceled(key);
    return true;
  }

  // --- one call, every answer mapped ------------------------------------------

  private async call<T>(operation: StripeOperation, kind: StripeCallKind, key: string, send: () => Promise<T>): Promise<Answer<T>>;
  private async call<T>(
    operation: StripeOperation,
    kind: StripeCallKind,
    key: string,
    send: () => Promise<T>,
    options: { idempotencyErrorIsAnswer: true },
  ): Promise<Answer<T> | typeof IDEMPOTENCY_ERROR>;
  private async call<T>(
    operation: StripeOperation,
    kind: StripeCallKind,
    key: string,
    send: () => Promise<T>,
    options?: { idempotencyErrorIsAnswer: true },
  ): Promise<Answer<T> | typeof IDEMPOTENCY_ERROR> {
    const started = performance.now();
    const observe = (outcome: StripeOutcome) => this.metrics.observe(operation, outcome, (performance.now() - started) / 1000, kind);
    let result: T;
    try {
      result = await send();
    } catch (error) {
      if (error instanceof Stripe.errors.StripeIdempotencyError) {
        // Counted once its meaning is known: reconciliation's (its probe, or its tombstone found) or our derivation's.
        if (options?.idempotencyErrorIsAnswer) {
          observe('key_reconciled');
          return IDEMPOTENCY_ERROR;
        }
        try {
          const canceled = await this.misusedOrCanceled(key, kind, error);
          observe('key_reconciled');
          return canceled;
        } catch (misuse) {
          if (misuse instanceof StripeIdempotencyKeyMisuseError) observe('idempotency_error');
          throw misuse;
        }
      }
      observe(outcomeOf(error));
      if (!(error instanceof Stripe.errors.StripeError)) throw error;
      if (error instanceof Stripe.errors.StripeCardError) return { card: error };
      if (isTransient(error)) {
        if ((error.statusCode ?? 0) >= 500) {
          throw new StripeServerError(this.settings.retryAfterSeconds, error.headers?.['idempotent-replayed'] === 'true');
        }
        throw new PaymentProviderUnavailableError(this.settings.retryAfterSeconds);
      }
      if (error instanceof Stripe.errors.StripeInvalidRequestError) return { invalid: error };
      // 401/403: our key or account is wrong - a 500 for us, never a decline stored against the customer.
      throw new StripeUnexpectedAnswerError(`${error.type} ${error.statusCode ?? ''} ${error.code ?? ''}`.trim());
    }
    observe('ok');
    return { ok: result };
  }

  /**
   * `idempotency_error` on our own request: reconciliation's tombstone
   * holds the key (the same tombstone request is then answered from
   * Stripe's store: canceled), or our derivation gave one key to two
   * different requests - loud, and never retried under another key.
   */
  private async misusedOrCanceled(
    key: string,
    kind: StripeCallKind,
    error: Stripe.errors.StripeIdempotencyError,
  ): Promise<{ canceled: true }> {
    const probe = await this.call(
      'payment_intents.create',
      'cancel',
      key,
      () => this.stripe.paymentIntents.create(tombstoneParams(key), { idempotencyKey: key }),
      {
        idempotencyErrorIsAnswer: true,
      },
    );
    if (probe !== IDEMPOTENCY_ERROR && 'ok' in probe && probe.ok.metadata?.tombstone_for === key) {
      await this.journal.canceled(key);
      return { canceled: true };
    }
    const misuse = new StripeIdempotencyKeyMisuseError(key, kind, error.message);
    this.logger.error(misuse.message);
    throw misuse;
  }
}

/** The SDK call, as the metrics name it (resource.method). */
export type StripeOperation =
  | 'payment_intents.create'
  | 'payment_intents.retrieve'
  | 'payment_intents.capture'
  | 'payment_intents.cancel'
  | 'payment_intents.search'
  | 'refunds.create'
  | 'refunds.list';

/**
 * What one call to Stripe came back with: ok; declined (card_error);
 * transient (connection, 5xx, 429, 409 - retried under the same key);
 * idempotency_error (the key carried another request and it was not
 * reconciliation's doing: our key derivation is wrong - alerted on);
 * key_reconciled (Stripe's idempotency_error that reconciliation expects:
 * its probe found the key in use, or a late request met its tombstone);
 * invalid (any other 4xx: a refusal such as capturing twice, or a request
 * we built wrong); error (anything else, e.g. 401: our secret key).
 */
export type StripeOutcome = 'ok' | 'declined' | 'transient' | 'idempotency_error' | 'key_reconciled' | 'invalid' | 'error';

/**
 * What a call to Stripe is for, by the port's operation whose key it carries:
 * `charge` (a charge or authorization, and look-ups of it), `capture`,
 * `void`, `refund`, and `cancel` (reconciliation canceling a key with a
 * tombstone, or a payment past the processing bound). The misuse alert names
 * it, so on-call knows whose key derivation to read.
 */
export type StripeCallKind = 'charge' | 'capture' | 'void' | 'refund' | 'cancel';

/** Where the adapter reports each call (MetricsService's stripe_requests_total and stripe_request_duration_seconds). */
export interface StripeMetrics {
  observe(operation: StripeOperation, outcome: StripeOutcome, seconds: number, kind: StripeCallKind): void;
}

function outcomeOf(error: unknown): StripeOutcome {
  if (!(error instanceof Stripe.errors.StripeError)) return 'error';
  if (error instanceof Stripe.errors.StripeCardError) return 'declined';
  if (isTransient(error)) return 'transient';
  if (error instanceof Stripe.errors.StripeInvalidRequestError) return 'invalid';
  return 'error';
}

/** Stripe's 400 idempotency_error, when the caller asked for it as an answer (cancelAtStripe). */
const IDEMPOTENCY_ERROR = Symbol('idempotency_error');

function isTransient(error: Stripe.errors.StripeError): boolean {
  if (error instanceof Stripe.errors.StripeConnectionError || error instanceof Stripe.errors.StripeRateLimitError) return true;
  const status = error.statusCode ?? 0;
  // 409: idempotency_key_in_use (the same key in flight) and lock_timeout (the object is locked by another request).
  return status === 409 || status === 429 || status >= 500 || error instanceof Stripe.errors.StripeAPIError;
}
