import fc from 'fast-check';
import { chargeEvent, type ChargeEventType } from '../../src/payment-simulator/webhook-events.js';
import { ProcessingReconciler } from '../../src/async-payments/processing-reconciler.js';
import { SettlementReconciliation } from '../../src/reconciliation/settlement-reconciliation.service.js';
import { findViolations } from '../support/invariants.js';
import { deliver, eventFor } from '../support/webhooks.js';
import type { ProtocolSystem, Reply } from './system.js';

/**
 * The model-based test of asynchronous payments and their webhooks (issue
 * 25), on the same two apps and manual clock as the protocol model. The
 * provider answers `processing`; fast-check generates the provider settling
 * a charge (succeeded or declined), deliveries of each of its events - one
 * copy or several at once, on either instance, late, out of order, or never
 * (a dropped event is one no command delivers) - retries of the create's
 * key, and the processing bound passing with the reconciliation on either
 * instance. The judge predicts every reply (the 202 replayed byte for byte;
 * each delivery's 200 with which copy applied and what it did) and, after
 * every command, the checker holds: every provider event applied at most
 * once, the ledger equal to the provider, each order where the model says;
 * after the final settle, no order still `processing`.
 */

export const WEBHOOK_SECRET = `whsec_${Buffer.from('model-based-webhook-secret-32-bytes!').toString('base64')}`;
/** PROCESSING_BOUND_MS of both apps: a few clock jumps pass it without reaching the keys' 60 s retention. */
export const PROCESSING_BOUND_MS = 10_000;
const MAX_JUMPS = 3;
const ORDER_SLOTS = 3;

type ProviderState = 'processing' | 'succeeded' | 'declined' | 'canceled';
/** An event the provider sends: its own, one reporting another amount, or the opposite of the outcome it settled. */
type EventKind = 'processing' | 'outcome' | 'other-amount' | 'contradiction';

interface AsyncOrder {
  key: string;
  id: string;
  chargeKey: string;
  /** What the provider holds under the charge key. */
  provider: ProviderState;
  /** Where the order is: processing until an outcome is applied (by a webhook or the reconciliation). */
  state: 'processing' | 'saved' | 'failed' | 'refunded';
  failureReason: string | null;
  created: { status: number; body: string; location?: string };
  /** The cancel's answer, once the key was canceled: replayed by every later cancel; the create refused. */
  canceled: string | null;
  /** The first receipt of each event id: every later delivery of it is a duplicate saying the same. */
  receipts: Map<string, { outcome: string; reason: string | null }>;
}

export class WebhookModel {
  orders: AsyncOrder[] = [];
  jumps = 0;
  creates = 0;
}

type Cmd = fc.AsyncCommand<WebhookModel, ProtocolSystem>;

const slotOf = (model: Readonly<WebhookModel>, slot: number) => model.orders[slot % model.orders.length];

function parse(body: string): Record<string, unknown> {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function expect(condition: boolean, what: string, got: { status: number; text?: string; body?: unknown }): void {
  if (!condition) throw new Error(`expected ${what}; got ${got.status} ${(got.text ?? JSON.stringify(got.body)).slice(0, 300)}`);
}

const asyncBody = () => ({
  customerId: 'cus_async',
  currency: 'USD',
  items: [{ sku: 'sku_async', quantity: 1, unitPriceMinor: 1500 }],
  paymentMethod: { token: 'tok_async' },
});

export class CreateAsyncCommand implements Cmd {
  check = (model: Readonly<WebhookModel>) => model.orders.length < ORDER_SLOTS;
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    const key = `w-create-${model.creates++}`;
    const reply = await system.request(0, 'post', '/v1/orders', { key, body: asyncBody() });
    const view = parse(reply.body);
    expect(reply.status === 202 && view.state === 'processing', '202 with a processing order', { status: reply.status, text: reply.body });
    const id = String(view.id);
    expect(reply.location === `/v1/orders/${id}`, `Location /v1/orders/${id}`, { status: reply.status, text: reply.body });
    model.orders.push({
      key,
      id,
      chargeKey: `charge:${id}`,
      provider: 'processing',
      state: 'processing',
      failureReason: null,
      created: { status: reply.status, body: reply.body, location: reply.location },
      canceled: null,
      receipts: new Map(),
    });
  }
  toString = () => 'createAsync()';
}

/** The create's key again: the stored 202, byte for byte, wherever the order is now. */
export class RetryCreateCommand implements Cmd {
  constructor(readonly slot: number) {}
  check = (model: Readonly<WebhookModel>) => model.orders.length > 0;
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    const order = slotOf(model, this.slot);
    const reply: Reply = await system.request(1, 'post', '/v1/orders', { key: order.key, body: asyncBody() });
    if (order.canceled) {
      const code = (parse(reply.body) as { code?: string }).code;
      expect(reply.status === 409 && code === 'idempotency_key_canceled', '409 idempotency_key_canceled', {
        status: reply.status,
        text: reply.body,
      });
      return;
    }
    const same = reply.status === 202 && reply.body === order.created.body && reply.replayed && reply.location === order.created.location;
    expect(same, 'the stored 202 replayed byte for byte', { status: reply.status, text: reply.body });
  }
  toString = () => `retryCreate(slot ${this.slot})`;
}

/** The provider decides a charge still processing; once only (a settled or canceled charge stays as it is). */
export class SettleCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly outcome: 'succeeded' | 'declined',
  ) {}
  check = (model: Readonly<WebhookModel>) => model.orders.length > 0;
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    const order = slotOf(model, this.slot);
    const status = await system.simulator(0).settleProcessing(order.chargeKey, this.outcome);
    if (order.provider === 'processing') order.provider = this.outcome;
    if (status !== order.provider) throw new Error(`the provider holds ${status}, the model ${order.provider}`);
  }
  toString = () => `providerSettles(slot ${this.slot}, ${this.outcome})`;
}

/**
 * Delivers one event of a charge, `copies` at once, signed as the provider
 * signs: `processing` (always known), or the outcome (only once the provider
 * settled; before that the event does not exist). Every copy is 200; the
 * first delivery ever of the event id records what it did, every other copy
 * is a duplicate saying the same.
 */
export class DeliverCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly event: EventKind,
    readonly copies: number,
    readonly instance: number,
  ) {}
  check = (model: Readonly<WebhookModel>) => {
    if (model.orders.length === 0) return false;
    const order = slotOf(model, this.slot);
    if (this.event === 'processing') return true;
    if (this.event === 'other-amount') return order.provider === 'succeeded';
    // The provider contradicts itself later: only about a charge it settled and an order settled since.
    if (this.event === 'contradiction')
      return order.state !== 'processing' && (order.provider === 'succeeded' || order.provider === 'declined');
    return order.provider === 'succeeded' || order.provider === 'declined';
  };
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    const order = slotOf(model, this.slot);
    const { t } = system.instances[this.instance];
    const event = await this.eventOf(order, system);
    const replies = await Promise.all(Array.from({ length: this.copies }, () => deliver(t, WEBHOOK_SECRET, event)));
    const first = order.receipts.get(event.id) ?? this.firstReceipt(order);
    for (const reply of replies) expect(reply.status === 200, '200 for every delivery', reply);
    const fresh = replies.filter((reply) => reply.body.duplicate === false);
    const known = order.receipts.has(event.id);
    expect(fresh.length === (known ? 0 : 1), known ? 'only duplicates' : 'exactly one delivery not a duplicate', replies[0]);
    for (const reply of replies) {
      const said = {
        outcome: reply.body.outcome,
        reason: reply.body.reason ?? null,
        eventId: reply.body.eventId,
        orderId: reply.body.orderId,
      };
      const expected = { outcome: first.outcome, reason: first.reason, eventId: event.id, orderId: order.id };
      expect(JSON.stringify(said) === JSON.stringify(expected), `the receipt ${JSON.stringify(expected)}`, reply);
    }
    if (!known) order.receipts.set(event.id, first);
    if (!known && first.outcome === 'applied') {
      order.state = order.provider === 'succeeded' ? 'saved' : 'failed';
      order.failureReason = order.state === 'failed' ? 'card_declined' : null;
    }
  }

  /** The type this delivery carries: the provider's outcome, or its opposite when it contradicts itself. */
  private typeOf(order: AsyncOrder): ChargeEventType {
    if (this.event === 'processing') return 'charge.processing';
    if (this.event === 'other-amount') return 'charge.succeeded';
    const failed = order.provider !== 'succeeded';
    return failed !== (this.event === 'contradiction') ? 'charge.failed' : 'charge.succeeded';
  }

  private async eventOf(order: AsyncOrder, system: ProtocolSystem) {
    const event = await eventFor(system.primary.simulatorDb, order.chargeKey, this.typeOf(order));
    if (this.event !== 'other-amount') return event;
    // Signed like the provider's own (the same event id), but one minor unit more than the charge.
    const data = event.data as { chargeKey: string; chargeId: string; amountMinor: number; currency: string };
    return chargeEvent('charge.succeeded', { ...data, amountMinor: data.amountMinor + 1 }, event.timestamp);
  }

  /** What the first delivery of this event does to the order as the model holds it. */
  private firstReceipt(order: AsyncOrder): { outcome: string; reason: string | null } {
    if (this.event === 'processing') return { outcome: 'ignored', reason: 'no_change' };
    const failedEvent = this.typeOf(order) === 'charge.failed';
    if (order.state !== 'processing')
      return { outcome: 'ignored', reason: (order.state === 'failed') !== failedEvent ? 'conflicting_outcome' : 'already_final' };
    if (this.event === 'other-amount') return { outcome: 'ignored', reason: 'amount_mismatch' };
    return { outcome: 'applied', reason: null };
  }
  toString = () => `deliver-${this.event}(slot ${this.slot}, x${this.copies}, i${this.instance})`;
}

/**
 * The processing bound passes (the clock jumps past it) and one instance's
 * reconciliation runs: each order still processing is settled by asking
 * the provider, and a charge the provider still processes is canceled there.
 */
export class BoundPassesCommand implements Cmd {
  constructor(readonly instance: number) {}
  check = (model: Readonly<WebhookModel>) => model.jumps < MAX_JUMPS;
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    model.jumps++;
    system.clock.advance(PROCESSING_BOUND_MS + 1);
    const run = await system.instances[this.instance].t.app.get(ProcessingReconciler).runOnce();
    const expected = { succeeded: 0, declined: 0, canceled: 0 };
    for (const order of model.orders.filter((candidate) => candidate.state === 'processing')) {
      if (order.provider === 'processing') order.provider = 'canceled';
      const result = order.provider === 'succeeded' ? 'succeeded' : order.provider === 'declined' ? 'declined' : 'canceled';
      expected[result]++;
      order.state = result === 'succeeded' ? 'saved' : 'failed';
      order.failureReason = result === 'succeeded' ? null : result === 'declined' ? 'card_declined' : 'processing_expired';
    }
    const got = { succeeded: run.succeeded, declined: run.declined, canceled: run.canceled };
    if (run.error > 0 || JSON.stringify(got) !== JSON.stringify(expected))
      throw new Error(`the reconciliation did ${JSON.stringify(run)}, the model expected ${JSON.stringify(expected)}`);
  }
  toString = () => `processingBoundPasses(i${this.instance})`;
}

/**
 * Cancel by key of an asynchronous create, on either instance: the provider
 * is asked - a charge still processing is canceled there and the order
 * fails (`canceled_before_charge`), a declined one fails the same way, a
 * succeeded one is saved and refunded in full (`refunded`); a saved order is
 * refunded; a failed one has nothing to undo. A second cancel answers the same.
 */
export class CancelAsyncCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly instance: number,
  ) {}
  check = (model: Readonly<WebhookModel>) => model.orders.length > 0;
  async run(model: WebhookModel, system: ProtocolSystem): Promise<void> {
    const order = slotOf(model, this.slot);
    const reply = await system.request(this.instance, 'post', `/v1/idempotency-keys/${order.key}/cancel`);
    const got = { status: reply.status, text: reply.body };
    if (order.canceled) {
      const same = JSON.stringify(parse(reply.body)) === JSON.stringify(parse(order.canceled));
      expect(reply.status === 200 && same, 'the same cancel answer', got);
      return;
    }
    const body = parse(reply.body);
    expect(reply.status === 200 && body.status === 'canceled', '200 canceled', got);
    if (order.state === 'processing') {
      if (order.provider === 'processing') order.provider = 'canceled';
      order.state = order.provider === 'succeeded' ? 'saved' : 'failed';
      order.failureReason = order.provider === 'succeeded' ? null : order.provider === 'declined' ? 'card_declined' : 'processing_expired';
      if (order.state === 'failed') expect(body.outcome === 'canceled_before_charge', 'outcome canceled_before_charge', got);
    }
    if (order.state === 'saved') {
      expect(body.outcome === 'refunded' && typeof body.refundId === 'string', 'outcome refunded, the refund named', got);
      order.state = 'refunded';
    } else if (order.state === 'failed' && order.canceled === null && body.outcome !== 'canceled_before_charge') {
      expect(body.outcome === 'nothing_to_undo', 'outcome nothing_to_undo', got);
    }
    order.canceled = reply.body;
  }
  toString = () => `cancelByKey(slot ${this.slot}, i${this.instance})`;
}

/** The store against the model and the provider, after every command. */
export async function checkWebhooks(model: WebhookModel, system: ProtocolSystem, settled: boolean): Promise<void> {
  const { db, simulatorDb } = system.primary;
  const violations = await findViolations({ db, simulatorDb, now: system.clock.now(), requireSettled: settled });
  for (const order of model.orders) {
    const stored = await db.collection<{ _id: string; state: string; failureReason: string | null }>('orders').findOne({ _id: order.id });
    if (stored?.state !== order.state || stored.failureReason !== order.failureReason)
      violations.push(
        `order ${order.id}: the store holds ${stored?.state} ${stored?.failureReason}, the model ${order.state} ${order.failureReason}`,
      );
    // Every provider event applied at most once: one inbox row per event id, at most one of them applied.
    const rows = await db.collection<{ _id: string; outcome: string }>('webhook_inbox').find({ orderId: order.id }).toArray();
    if (rows.length !== order.receipts.size)
      violations.push(`order ${order.id}: ${rows.length} inbox rows, the model ${order.receipts.size} events`);
    if (rows.filter((row) => row.outcome === 'applied').length > 1) violations.push(`order ${order.id}: more than one event applied`);
    if (settled && stored?.state === 'processing') violations.push(`order ${order.id}: still processing after the settle`);
  }
  const now = system.clock.now().getTime();
  const day = 24 * 3600 * 1000;
  const service = system.primary.app.get(SettlementReconciliation);
  // Its re-check of a mismatch waits the reaper's horizon in real time; the model's clock is its own (money-model.ts).
  if ('recheckAfterMs' in service) Object.defineProperty(service, 'recheckAfterMs', { value: 0 });
  const report = await service.run(new Date(now - day), new Date(now + day));
  // Money the provider settled whose outcome has not reached the order yet (its webhook on the way, or the bound
  // not passed): the one difference healthy books may show - the scheduled pass looks a processing bound back for it.
  const arriving = new Set(model.orders.filter((o) => o.state === 'processing' && o.provider === 'succeeded').map((o) => o.id));
  const mismatches = report.mismatches.filter((m) => !(m.kind === 'missing_in_ledger' && arriving.has(m.orderId)));
  if (mismatches.length > 0) violations.push(`settlement reconciliation on healthy books: ${JSON.stringify(mismatches)}`);
  if (violations.length > 0) throw new Error(`webhook invariants broken:\n${violations.join('\n')}`);
}

/**
 * The end of every run: the provider settles or keeps every charge as it
 * is, the bound passes, and nothing may be left processing; the ledger
 * equals the provider.
 */
export async function settleWebhooks(model: WebhookModel, system: ProtocolSystem): Promise<void> {
  model.jumps = 0;
  await new BoundPassesCommand(0).run(model, system);
  await checkWebhooks(model, system, true);
}

export function webhookCommands(): fc.Arbitrary<Cmd>[] {
  const slot = fc.integer({ min: 0, max: ORDER_SLOTS - 1 });
  const instance = fc.integer({ min: 0, max: 1 });
  const deliverCmd = fc
    .tuple(
      slot,
      fc.constantFrom<EventKind>('processing', 'outcome', 'outcome', 'other-amount', 'contradiction'),
      fc.constantFrom(1, 1, 2, 3),
      instance,
    )
    .map(([s, event, copies, i]) => new DeliverCommand(s, event, copies, i));
  return [
    fc.constant(null).map(() => new CreateAsyncCommand()),
    fc.constant(null).map(() => new CreateAsyncCommand()),
    fc
      .tuple(slot, fc.constantFrom<'succeeded' | 'declined'>('succeeded', 'succeeded', 'declined'))
      .map(([s, o]) => new SettleCommand(s, o)),
    fc.tuple(slot, fc.constantFrom<'succeeded' | 'declined'>('succeeded', 'declined')).map(([s, o]) => new SettleCommand(s, o)),
    deliverCmd,
    deliverCmd,
    deliverCmd,
    deliverCmd,
    slot.map((s) => new RetryCreateCommand(s)),
    instance.map((i) => new BoundPassesCommand(i)),
    fc.tuple(slot, instance).map(([s, i]) => new CancelAsyncCommand(s, i)),
  ];
}
