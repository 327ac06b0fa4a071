import fc from 'fast-check';
import type { FaultPoint } from '../../src/config/configuration.js';
import { findViolations } from '../support/invariants.js';
import { SETTINGS, type ProtocolSystem, type Reply } from './system.js';

/**
 * The model-based test of the money after the charge: refunds, capture,
 * void and cancel by key, on the same two real apps and manual clock as the
 * protocol model (system.ts). fast-check generates sequences of creates
 * (automatic or manual capture), keyed refunds, captures and voids (new
 * keys, retries, the same key with another body or on another order), two
 * copies of one refund racing on both instances, a provider outage during a
 * refund, a crash at each refund fault point followed by the reaper, and
 * cancels by key. The judge predicts every reply - status, code, which
 * refund, the amounts - from the model's own ledger of what each order
 * holds, and after every command the invariant checker compares the store
 * with the provider: provider refunds = ledger reversals = succeeded
 * refunds, refunded <= captured <= authorized, one provider operation per
 * key.
 */

/** Every order of a run costs this much; refunds and captures are parts of it. */
export const PRICE = 1000;
const AMOUNTS = [100, 250, 400, 600, PRICE];
const ORDER_SLOTS = 3;
const KEY_SLOTS = 3;
/** Clock jumps past the resume window (crash then reap): two fit in a key's retention, with room to spare. */
const MAX_JUMPS = 2;
const REFUND_CRASH_POINTS: FaultPoint[] = ['after-refund-claim', 'after-refund-provider'];
const REASON = 'requested_by_customer';

type Capture = 'automatic' | 'manual';
type Token = 'tok_visa' | 'tok_refund_decline';

interface Answer {
  status: number;
  body: string;
  location?: string;
}

interface OrderModel {
  createKey: string;
  capture: Capture;
  token: Token;
  id: string;
  state: string;
  authorized: number;
  captured: number;
  refunded: number;
  /** Reserved by refunds whose record is still pending (a 503, a crash): not refundable until they end. */
  reserved: number;
  created: Answer;
  /** The cancel's answer, once canceled: the same again for any later cancel. */
  canceled: Answer | null;
}

type Operation = 'refund' | 'capture' | 'void';

/** One keyed request's record as the model sees it. */
interface KeyModel {
  operation: Operation;
  /** The order and body the key was first used with: anything else under it is 422. */
  order: number;
  amount: number | null;
  /**
   * Stored: replayed byte for byte. Pending: a 503 left it resumable, its amount reserved. Abandoned: the
   * reaper gave the attempt up (nothing refunded); the key still holds its body, so the same body is a new
   * attempt and another one 422.
   */
  status: 'stored' | 'pending' | 'abandoned';
  answer: Answer | null;
  refundId?: string;
}

export class MoneyModel {
  orders: OrderModel[] = [];
  keys = new Map<string, KeyModel>();
  jumps = 0;
  creates = 0;
  now = 0;
}

type Cmd = fc.AsyncCommand<MoneyModel, ProtocolSystem>;

/** Whether a new refund of (slot, amount) may start under the key: unused, or abandoned with that very body. */
function freshUnder(model: Readonly<MoneyModel>, key: string, slot: number, amount: number): boolean {
  const known = model.keys.get(key);
  return !known || (known.status === 'abandoned' && known.operation === 'refund' && known.order === slot && known.amount === amount);
}

/** The order a command names: its slot modulo the orders there are, so that no command waits for its slot's create. */
const slotOf = (model: Readonly<MoneyModel>, slot: number) => slot % model.orders.length;

const refundable = (order: OrderModel) => order.captured - order.refunded - order.reserved;
const REFUNDABLE_STATES = ['saved', 'captured', 'partially_refunded'];

function parse(body: string): Record<string, unknown> {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function describeReply(reply: Reply): string {
  return `${reply.status} ${reply.body.slice(0, 300)} (replayed ${reply.replayed}, retry-after ${reply.retryAfter})`;
}

/** Fails the run with what the model expected and what came. */
function expect(condition: boolean, what: string, reply: Reply): void {
  if (!condition) throw new Error(`expected ${what}; got ${describeReply(reply)}`);
}

function expectProblem(reply: Reply, status: number, code: string): void {
  expect(reply.status === status && parse(reply.body).code === code, `${status} ${code}`, reply);
  expect(!reply.replayed, `a ${code} that is no replay`, reply);
}

function expectReplay(reply: Reply, answer: Answer): void {
  expect(reply.status === answer.status && reply.body === answer.body, `the stored ${answer.status} again, byte for byte`, reply);
  expect(reply.replayed, 'Idempotent-Replayed: true', reply);
  expect(reply.location === answer.location, `Location ${answer.location} again`, reply);
}

function createBody(capture: Capture, token: Token) {
  return {
    customerId: 'cus_money',
    currency: 'USD',
    items: [{ sku: 'sku_money', quantity: 1, unitPriceMinor: PRICE }],
    paymentMethod: { token },
    ...(capture === 'manual' ? { capture } : {}),
  };
}

export class CreateCommand implements Cmd {
  constructor(
    readonly capture: Capture,
    readonly token: Token,
  ) {}
  check = (model: Readonly<MoneyModel>) => model.orders.length < ORDER_SLOTS;
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const key = `m-create-${model.creates++}`;
    const reply = await system.request(0, 'post', '/v1/orders', { key, body: createBody(this.capture, this.token) });
    const view = parse(reply.body);
    const state = this.capture === 'manual' ? 'authorized' : 'saved';
    expect(reply.status === 201 && view.state === state, `201 with a ${state} order`, reply);
    const id = String(view.id);
    expect(reply.location === `/v1/orders/${id}`, `Location /v1/orders/${id}`, reply);
    const captured = this.capture === 'manual' ? 0 : PRICE;
    expect(view.authorizedMinor === PRICE && view.capturedMinor === captured && view.refundedMinor === 0, 'the amounts', reply);
    model.orders.push({
      createKey: key,
      capture: this.capture,
      token: this.token,
      id,
      state,
      authorized: PRICE,
      captured,
      refunded: 0,
      reserved: 0,
      created: { status: reply.status, body: reply.body, location: reply.location },
      canceled: null,
    });
  }
  toString = () => `create(${this.capture}, ${this.token})`;
}

/** The create sent again under its key: the stored 201, or 409 once the key was canceled. */
export class RetryCreateCommand implements Cmd {
  constructor(readonly slot: number) {}
  check = (model: Readonly<MoneyModel>) => model.orders.length > 0;
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const order = model.orders[slotOf(model, this.slot)];
    const reply = await system.request(1, 'post', '/v1/orders', { key: order.createKey, body: createBody(order.capture, order.token) });
    if (order.canceled) {
      expectProblem(reply, 409, 'idempotency_key_canceled');
      return;
    }
    expectReplay(reply, order.created);
  }
  toString = () => `retryCreate(slot ${this.slot})`;
}

/**
 * What a refund request must get, and what it changes in the model. `first`
 * is how a new attempt ends (the provider answered; or a 503 or crash
 * before it did, which leave the key pending).
 */
function serveRefund(model: MoneyModel, key: string, slot: number, amount: number, reply: Reply, first: 'answered' | 'outage'): void {
  const order = model.orders[slot];
  const known = model.keys.get(key);
  if (known && (known.operation !== 'refund' || known.order !== slot || known.amount !== amount)) {
    expectProblem(reply, 422, 'idempotency_key_reused');
    return;
  }
  if (known?.status === 'stored') {
    expectReplay(reply, known.answer!);
    return;
  }
  if (known?.status === 'pending') {
    // A resumed attempt: the same refund, its reservation already made, the same provider key.
    if (first === 'outage') {
      expectProblem(reply, 503, 'payment_provider_unavailable');
      return;
    }
    order.reserved -= amount;
    answerRefund(model, key, slot, amount, reply, known.refundId);
    return;
  }
  if (!REFUNDABLE_STATES.includes(order.state)) {
    expectProblem(reply, 409, 'order_not_refundable');
    return;
  }
  if (amount > refundable(order)) {
    expectProblem(reply, 422, 'refund_exceeds_captured');
    return;
  }
  if (first === 'outage') {
    expectProblem(reply, 503, 'payment_provider_unavailable');
    order.reserved += amount;
    model.keys.set(key, { operation: 'refund', order: slot, amount, status: 'pending', answer: null });
    return;
  }
  answerRefund(model, key, slot, amount, reply);
}

/** The provider answered a refund (now, or when its attempt resumed): 201 succeeded, or the stored 402. */
function answerRefund(model: MoneyModel, key: string, slot: number, amount: number, reply: Reply, refundId?: string): void {
  const order = model.orders[slot];
  const body = parse(reply.body);
  if (order.token === 'tok_refund_decline') {
    expect(reply.status === 402 && body.code === 'refund_declined', '402 refund_declined (stored)', reply);
  } else {
    expect(reply.status === 201 && body.state === 'succeeded' && body.amountMinor === amount, `201 a succeeded refund of ${amount}`, reply);
    expect(body.orderId === order.id, `a refund of order ${order.id}`, reply);
    if (refundId) expect(body.id === refundId, `refund ${refundId} (the attempt the key holds)`, reply);
    order.refunded += amount;
    order.state = order.refunded === order.captured ? 'refunded' : 'partially_refunded';
  }
  expect(!reply.replayed, 'a first answer, no replay', reply);
  model.keys.set(key, {
    operation: 'refund',
    order: slot,
    amount,
    status: 'stored',
    answer: { status: reply.status, body: reply.body, location: reply.location },
    refundId: typeof body.id === 'string' ? body.id : undefined,
  });
}

const refundPath = (order: OrderModel) => `/v1/orders/${order.id}/refunds`;
const refundBody = (amount: number) => ({ amountMinor: amount, reason: REASON });

export class RefundCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly keySlot: number,
    readonly amount: number,
    readonly instance: number,
    readonly outage: boolean,
  ) {}
  check = (model: Readonly<MoneyModel>) => model.orders.length > 0;
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const slot = slotOf(model, this.slot);
    const order = model.orders[slot];
    const key = `m-refund-${this.keySlot}`;
    const gateway = system.instances[this.instance].gateway;
    if (this.outage) gateway.failNextOperations('refund', 1);
    const reply = await system.request(this.instance, 'post', refundPath(order), { key, body: refundBody(this.amount) });
    gateway.failNextOperations('refund', 0);
    serveRefund(model, key, slot, this.amount, reply, this.outage ? 'outage' : 'answered');
  }
  toString = () =>
    `refund(slot ${this.slot}, m-refund-${this.keySlot}, ${this.amount}, i${this.instance}${this.outage ? ', provider down' : ''})`;
}

/** Two copies of one new refund at once, one held at the provider: the other is told it is in flight. */
export class RefundRaceCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly keySlot: number,
    readonly amount: number,
  ) {}
  check = (model: Readonly<MoneyModel>) => {
    const order = model.orders.length > 0 ? model.orders[slotOf(model, this.slot)] : undefined;
    // Only a refund that reaches the provider can be held there.
    return (
      order !== undefined &&
      freshUnder(model, `m-refund-${this.keySlot}`, slotOf(model, this.slot), this.amount) &&
      REFUNDABLE_STATES.includes(order.state) &&
      this.amount <= refundable(order)
    );
  };
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const slot = slotOf(model, this.slot);
    const order = model.orders[slot];
    const key = `m-refund-${this.keySlot}`;
    const hold = system.instances[0].gateway.holdNextOperation('refund');
    const first = system.request(0, 'post', refundPath(order), { key, body: refundBody(this.amount) });
    await hold.reached;
    const second = await system.request(1, 'post', refundPath(order), { key, body: refundBody(this.amount) });
    hold.release();
    const reply = await first;
    expectProblem(second, 409, 'idempotency_key_in_use');
    expect(second.retryAfter === '1', 'Retry-After: 1 on the 409 in flight', second);
    serveRefund(model, key, slot, this.amount, reply, 'answered');
  }
  toString = () => `refundRace(slot ${this.slot}, m-refund-${this.keySlot}, ${this.amount})`;
}

/**
 * A refund whose worker dies at a fault point, the clock past the lease and
 * the resume window, the reaper on both instances, then the client's retry:
 * died before the provider call -> the reaper cancels the refund key and
 * abandons it (nothing refunded; the retry is a new attempt); died after the
 * provider refunded -> the reaper finishes it (the retry is its replay).
 */
export class RefundCrashCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly keySlot: number,
    readonly amount: number,
    readonly point: FaultPoint,
  ) {}
  check = (model: Readonly<MoneyModel>) => {
    const order = model.orders.length > 0 ? model.orders[slotOf(model, this.slot)] : undefined;
    // A declined refund's crash is the refunds suite's: here the reaper's count stays one outcome per point.
    return (
      model.jumps < MAX_JUMPS &&
      order !== undefined &&
      order.token === 'tok_visa' &&
      freshUnder(model, `m-refund-${this.keySlot}`, slotOf(model, this.slot), this.amount) &&
      REFUNDABLE_STATES.includes(order.state) &&
      this.amount <= refundable(order)
    );
  };
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const slot = slotOf(model, this.slot);
    const order = model.orders[slot];
    const key = `m-refund-${this.keySlot}`;
    system.armCrash(0, this.point);
    const crashed = await system.request(0, 'post', refundPath(order), { key, body: refundBody(this.amount) });
    expect(system.crashed(0) && crashed.status === 500, `the worker to die at ${this.point}`, crashed);
    const jump = Math.max(SETTINGS.leaseMs, SETTINGS.resumeWindowMs) + 1;
    system.clock.advance(jump);
    model.now += jump;
    model.jumps++;
    const runs = [await system.reap(0), await system.reap(1)];
    const completed = runs.reduce((sum, run) => sum + run.completed, 0);
    const abandoned = runs.reduce((sum, run) => sum + run.abandoned, 0);
    // Outage-released refunds still pending are the reaper's too: the provider never saw them, so it cancels them.
    let expectedAbandoned = 0;
    for (const k of model.keys.values()) {
      if (k.status !== 'pending') continue;
      model.orders[k.order].reserved -= k.amount ?? 0;
      k.status = 'abandoned';
      expectedAbandoned++;
    }
    if (this.point === 'after-refund-claim') expectedAbandoned++;
    const expectedCompleted = this.point === 'after-refund-provider' ? 1 : 0;
    const reapedAsExpected = completed === expectedCompleted && abandoned === expectedAbandoned;
    if (!reapedAsExpected)
      throw new Error(
        `reaper completed ${completed} and abandoned ${abandoned}; the model expected ${expectedCompleted} and ${expectedAbandoned}`,
      );
    const retry = await system.request(1, 'post', refundPath(order), { key, body: refundBody(this.amount) });
    if (this.point === 'after-refund-claim') {
      // A new attempt: a new refund, under a new provider key.
      model.keys.set(key, { operation: 'refund', order: slot, amount: this.amount, status: 'abandoned', answer: null });
      serveRefund(model, key, slot, this.amount, retry, 'answered');
      return;
    }
    // The reaper finished it: the retry replays what it stored.
    const body = parse(retry.body);
    expect(retry.status === 201 && body.state === 'succeeded' && body.amountMinor === this.amount, 'the stored 201', retry);
    expect(retry.replayed, 'the reaper-stored answer replayed', retry);
    order.refunded += this.amount;
    order.state = order.refunded === order.captured ? 'refunded' : 'partially_refunded';
    model.keys.set(key, {
      operation: 'refund',
      order: slot,
      amount: this.amount,
      status: 'stored',
      answer: { status: retry.status, body: retry.body, location: retry.location },
    });
  }
  toString = () => `refundCrash(slot ${this.slot}, m-refund-${this.keySlot}, ${this.amount}, at ${this.point})`;
}

/**
 * A capture or void under a key the model has seen: 422 for another order or
 * body, else its stored answer replayed. True when the reply was judged so.
 */
function answeredByKey(
  model: Readonly<MoneyModel>,
  key: string,
  request: Pick<KeyModel, 'operation' | 'order' | 'amount'>,
  reply: Reply,
): boolean {
  const known = model.keys.get(key);
  if (!known) return false;
  if (known.operation !== request.operation || known.order !== request.order || known.amount !== request.amount) {
    expectProblem(reply, 422, 'idempotency_key_reused');
  } else {
    expectReplay(reply, known.answer!);
  }
  return true;
}

export class CaptureCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly keySlot: number,
    readonly amount: number | null,
  ) {}
  check = (model: Readonly<MoneyModel>) => model.orders.length > 0;
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const slot = slotOf(model, this.slot);
    const order = model.orders[slot];
    const key = `m-capture-${this.keySlot}`;
    const body = this.amount === null ? {} : { amountMinor: this.amount };
    const reply = await system.request(0, 'post', `/v1/orders/${order.id}/capture`, { key, body });
    if (answeredByKey(model, key, { operation: 'capture', order: slot, amount: this.amount }, reply)) return;
    if (order.state !== 'authorized') {
      expectProblem(reply, 409, 'order_not_capturable');
      return;
    }
    const amount = this.amount ?? order.authorized;
    const view = parse(reply.body);
    expect(reply.status === 200 && view.state === 'captured' && view.capturedMinor === amount, `200 captured ${amount}`, reply);
    order.state = 'captured';
    order.captured = amount;
    model.keys.set(key, {
      operation: 'capture',
      order: slot,
      amount: this.amount,
      status: 'stored',
      answer: { status: reply.status, body: reply.body, location: reply.location },
    });
  }
  toString = () => `capture(slot ${this.slot}, m-capture-${this.keySlot}, ${this.amount ?? 'all'})`;
}

export class VoidCommand implements Cmd {
  constructor(
    readonly slot: number,
    readonly keySlot: number,
  ) {}
  check = (model: Readonly<MoneyModel>) => model.orders.length > 0;
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const slot = slotOf(model, this.slot);
    const order = model.orders[slot];
    const key = `m-void-${this.keySlot}`;
    const reply = await system.request(1, 'post', `/v1/orders/${order.id}/void`, { key, body: {} });
    if (answeredByKey(model, key, { operation: 'void', order: slot, amount: null }, reply)) return;
    if (order.state !== 'authorized') {
      expectProblem(reply, 409, 'order_not_voidable');
      return;
    }
    const view = parse(reply.body);
    expect(reply.status === 200 && view.state === 'voided', '200 voided', reply);
    order.state = 'voided';
    model.keys.set(key, {
      operation: 'void',
      order: slot,
      amount: null,
      status: 'stored',
      answer: { status: reply.status, body: reply.body, location: reply.location },
    });
  }
  toString = () => `void(slot ${this.slot}, m-void-${this.keySlot})`;
}

/**
 * Cancel by key on an order's create key: a charged order is refunded in
 * full (what is left of it), an authorization is voided, anything else has
 * nothing to undo; the key is canceled either way, and a second cancel
 * answers the same.
 */
export class CancelCommand implements Cmd {
  constructor(readonly slot: number) {}
  // A refund that the issuer declines cannot undo a charge: that is the refunds suite's case, not a cancel's.
  check = (model: Readonly<MoneyModel>) => {
    const order = model.orders.length > 0 ? model.orders[slotOf(model, this.slot)] : undefined;
    return order !== undefined && order.reserved === 0 && order.token === 'tok_visa';
  };
  async run(model: MoneyModel, system: ProtocolSystem): Promise<void> {
    const order = model.orders[slotOf(model, this.slot)];
    const reply = await system.request(0, 'post', `/v1/idempotency-keys/${order.createKey}/cancel`);
    if (order.canceled) {
      expect(reply.status === order.canceled.status && sameCancel(reply.body, order.canceled.body), 'the same cancel answer', reply);
      return;
    }
    const body = parse(reply.body);
    expect(reply.status === 200 && body.status === 'canceled', '200 canceled', reply);
    const left = refundable(order);
    if (REFUNDABLE_STATES.includes(order.state) && left > 0) {
      expect(body.outcome === 'refunded', `outcome refunded (${left} left of order ${order.id})`, reply);
      order.refunded += left;
      order.state = 'refunded';
    } else if (order.state === 'authorized') {
      expect(body.outcome === 'voided', 'outcome voided', reply);
      order.state = 'voided';
    } else {
      expect(body.outcome === 'nothing_to_undo', 'outcome nothing_to_undo', reply);
    }
    order.canceled = { status: reply.status, body: reply.body };
  }
  toString = () => `cancelByKey(slot ${this.slot})`;
}

/** A second cancel answers what the first did (its time included): the cancel is idempotent itself. */
function sameCancel(got: string, first: string): boolean {
  return got === first || JSON.stringify({ ...parse(got) }) === JSON.stringify({ ...parse(first) });
}

/** After every command: the checker's money rules, and the model's amounts against each order as stored. */
export async function checkMoney(model: MoneyModel, system: ProtocolSystem, settled: boolean): Promise<void> {
  const { db, simulatorDb } = system.primary;
  const violations = await findViolations({
    db,
    simulatorDb,
    requireSettled: settled,
    now: system.clock.now(),
    tombstoneSeconds: SETTINGS.tombstoneSeconds,
  });
  for (const order of model.orders) {
    const stored = await db
      .collection<{ _id: string; state: string; capturedMinor: number; refundedMinor: number; refundableMinor: number }>('orders')
      .findOne({ _id: order.id });
    if (!stored) {
      violations.push(`order ${order.id}: missing`);
      continue;
    }
    const expected = { state: order.state, captured: order.captured, refunded: order.refunded, refundable: refundable(order) };
    const got = { state: stored.state, captured: stored.capturedMinor, refunded: stored.refundedMinor, refundable: stored.refundableMinor };
    if (JSON.stringify(expected) !== JSON.stringify(got))
      violations.push(`order ${order.id}: the store holds ${JSON.stringify(got)}, the model ${JSON.stringify(expected)}`);
  }
  // One provider operation per key: the provider's refunds of a run are those the model's keys made, no more.
  const providerRefunds = await simulatorDb.collection('operations').countDocuments({ kind: 'refund', status: 'succeeded' });
  const modelRefunds =
    [...model.keys.values()].filter((k) => k.operation === 'refund' && k.status === 'stored').length +
    model.orders.filter((order) => order.canceled && parse(order.canceled.body).outcome === 'refunded').length;
  const declinedRefunds = [...model.keys.values()].filter(
    (k) => k.operation === 'refund' && k.status === 'stored' && k.answer?.status === 402,
  ).length;
  if (providerRefunds !== modelRefunds - declinedRefunds)
    violations.push(`${providerRefunds} refunds at the provider, the model made ${modelRefunds - declinedRefunds}`);
  if (violations.length > 0) throw new Error(`money invariants broken:\n${violations.join('\n')}`);
}

export function moneyCommands(): fc.Arbitrary<Cmd>[] {
  const slot = fc.integer({ min: 0, max: ORDER_SLOTS - 1 });
  const keySlot = fc.integer({ min: 0, max: KEY_SLOTS - 1 });
  const amount = fc.constantFrom(...AMOUNTS);
  const create = fc
    .tuple(fc.constantFrom<Capture>('automatic', 'manual'), fc.constantFrom<Token>('tok_visa', 'tok_visa', 'tok_refund_decline'))
    .map(([capture, token]) => new CreateCommand(capture, token));
  const refund = fc
    .tuple(slot, keySlot, amount, fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 4 }))
    .map(([s, k, a, i, outage]) => new RefundCommand(s, k, a, i, outage === 0));
  // fc.commands picks uniformly among these: creates and refunds listed twice, the rest once.
  return [
    create,
    create,
    refund,
    refund,
    fc.tuple(slot, keySlot, amount).map(([s, k, a]) => new RefundRaceCommand(s, k, a)),
    fc
      .tuple(slot, keySlot, amount, fc.constantFrom(...REFUND_CRASH_POINTS))
      .map(([s, k, a, point]) => new RefundCrashCommand(s, k, a, point)),
    fc.tuple(slot, fc.integer({ min: 0, max: 1 }), fc.constantFrom(null, 600)).map(([s, k, a]) => new CaptureCommand(s, k, a)),
    fc.tuple(slot, fc.integer({ min: 0, max: 1 })).map(([s, k]) => new VoidCommand(s, k)),
    slot.map((s) => new CancelCommand(s)),
    slot.map((s) => new RetryCreateCommand(s)),
  ];
}
