import fc from 'fast-check';
import type { FaultPoint } from '../../src/config/configuration.js';
import { orderBody } from '../support/fixtures.js';
import { findViolations } from '../support/invariants.js';
import { SETTINGS, type ProtocolSystem, type Reply } from './system.js';

/**
 * What a client may legitimately see, per key: the model remembers the body
 * variant that claimed a key and the first final answer (201 or 402) any
 * client saw, and judges every reply against them. It knows only what a
 * client could know, so where the system's hidden state decides (was that
 * crashed request's claim committed?), it allows each legitimate outcome.
 */
export const KEYS = ['k-a', 'k-b', 'k-c'];
export const CUSTOMERS = ['cus_model_a', 'cus_model_b'];
/** Body variants: two customers, two amounts, a card that is declined. */
export const VARIANTS = [
  { customer: 0, body: orderBody({ customerId: CUSTOMERS[0] }) },
  { customer: 0, body: orderBody({ customerId: CUSTOMERS[0], items: [{ sku: 'sku_2', quantity: 1, unitPriceMinor: 999 }] }) },
  { customer: 1, body: orderBody({ customerId: CUSTOMERS[1], paymentMethod: { token: 'tok_decline' } }) },
  { customer: 1, body: orderBody({ customerId: CUSTOMERS[1] }) },
];
const CRASH_POINTS: FaultPoint[] = ['after-claim', 'after-charge', 'after-charged', 'before-response'];
const MAX_ZOMBIES = 3;

interface KeyState {
  variant: number;
  final?: { status: number; body: string };
  erased?: boolean;
  /**
   * The client cannot know which body owns the key: past retention an
   * abandoned record may have been replaced, and an erased record keeps no
   * fingerprint. Then 422 and a first final answer for any body are fine.
   */
  anyVariant?: boolean;
  /**
   * The final answer came from a record whose customer was erased while it
   * was in flight (it names the pseudonym): that request finished after the
   * erasure, so it leaves no tombstone (README, Tombstones).
   */
  answeredErased?: boolean;
}

export class Model {
  keys = new Map<string, KeyState>();
  zombies: { instance: number; key: string; variant: number; outage: boolean }[] = [];
  armedCrash: (FaultPoint | null)[] = [null, null];
  outage = false;
  /** Customers whose data was erased, and not sent again since. */
  erased = new Set<string>();
  /**
   * Per key, the body variants whose final answer a client saw and that are
   * now past retention: their tombstone refuses the same body (409
   * idempotency_key_expired) until an erasure of the customer removes it.
   */
  tombstones = new Map<string, Set<number>>();
  /** Every (key, variant) ever sent: a tombstone the model did not see (a crashed client's) can only be one of these. */
  sent = new Set<string>();
  log: string[] = [];
}

type Cmd = fc.AsyncCommand<Model, ProtocolSystem>;

/** The customer id an erasure leaves on orders (privacy/erasure.service.ts). */
const PSEUDONYM = /"customerId":"erased_[0-9a-f]+"/;

/** Judges one reply a client got for (key, variant); throws with the model's view when it is not allowed. */
function judge(model: Model, key: string, variant: number, reply: Reply, crashed: boolean, outage: boolean): void {
  const fail = (why: string) => {
    throw new Error(
      `${why}: key ${key} variant ${variant} got ${reply.status} ${reply.body.slice(0, 200)}\nmodel: ${JSON.stringify([...model.keys])}`,
    );
  };
  const state = model.keys.get(key);
  if (crashed) {
    // The client saw no answer. The claim may or may not have committed.
    if (!state) model.keys.set(key, { variant });
    return;
  }
  const { status } = reply;
  if (status === 503) {
    // The claim committed before the provider failed: the key is this body's now.
    if (!state) model.keys.set(key, { variant });
    return outage ? undefined : fail('503 without a provider outage');
  }
  if (status >= 500) return fail('5xx');
  const tombstoned = model.tombstones.get(key)?.has(variant) ?? false;
  if (!state && tombstoned && status !== 409) return fail('a late retry of an answered body ran again instead of its tombstone answering');
  if (status === 409) {
    if (state) return;
    const expired = reply.body.includes('"idempotency_key_expired"');
    return expired && model.sent.has(`${key}#${variant}`)
      ? undefined
      : fail('409 for a key with no live record and no tombstone of this body');
  }
  if (status === 422)
    return state && (state.anyVariant || state.variant !== variant) ? undefined : fail('422 for the body that owns the key');
  if (status === 410) {
    if (!state?.erased) return fail('410 for a key whose customer was not erased');
    state.final ??= { status, body: reply.body };
    return;
  }
  if (status !== 201 && status !== 402) return fail('unexpected status');
  if (state?.erased && reply.body.includes(CUSTOMERS[VARIANTS[state.variant].customer])) return fail('an erased customer id answered');
  if (state?.final) {
    if (state.erased) return undefined;
    if (status !== state.final.status || reply.body !== state.final.body)
      return fail(`a second, different final answer (first: ${state.final.status} ${state.final.body.slice(0, 120)})`);
    return reply.replayed ? undefined : fail('the same answer again without Idempotent-Replayed');
  }
  if (state && !state.anyVariant && state.variant !== variant) return fail('another body got a final answer instead of 422');
  const answeredErased = state?.erased === true && PSEUDONYM.test(reply.body);
  model.keys.set(key, { variant, final: { status, body: reply.body }, answeredErased });
}

export class SendCommand implements Cmd {
  constructor(
    readonly instance: number,
    readonly key: string,
    readonly variant: number,
    readonly hold: 'none' | 'before' | 'after',
  ) {}
  check = (model: Readonly<Model>) => this.hold === 'none' || model.zombies.length < MAX_ZOMBIES;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const { body, customer } = VARIANTS[this.variant];
    model.erased.delete(CUSTOMERS[customer]);
    model.sent.add(`${this.key}#${this.variant}`);
    const outage = model.outage;
    if (this.hold === 'none') {
      const reply = await system.send(this.instance, this.key, body);
      model.armedCrash[this.instance] = null;
      return judge(model, this.key, this.variant, reply, system.crashed(this.instance), outage);
    }
    const result = await system.sendAndHold(this.instance, this.key, body, this.variant, this.hold);
    if ('release' in result) {
      model.zombies.push({ instance: this.instance, key: this.key, variant: this.variant, outage });
      if (!model.keys.has(this.key)) model.keys.set(this.key, { variant: this.variant });
      return;
    }
    model.armedCrash[this.instance] = null;
    judge(model, this.key, this.variant, result, system.crashed(this.instance), outage);
  }
  toString = () => `send(i${this.instance}, ${this.key}, v${this.variant}${this.hold === 'none' ? '' : `, hold ${this.hold}`})`;
}

export class ResumeCommand implements Cmd {
  constructor(readonly index: number) {}
  check = (model: Readonly<Model>) => this.index < model.zombies.length;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const [zombie] = model.zombies.splice(this.index, 1);
    const outage = zombie.outage || model.outage;
    const { reply } = await system.resume(this.index);
    // A crash armed on the instance after the request was held may fire in it now.
    model.armedCrash[zombie.instance] = null;
    judge(model, zombie.key, zombie.variant, reply, system.crashed(zombie.instance), outage);
  }
  toString = () => `resume(${this.index})`;
}

export class CrashCommand implements Cmd {
  constructor(
    readonly instance: number,
    readonly point: FaultPoint,
  ) {}
  check = (model: Readonly<Model>) => model.armedCrash[this.instance] === null;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    model.armedCrash[this.instance] = this.point;
    system.armCrash(this.instance, this.point);
  }
  toString = () => `crashNext(i${this.instance}, ${this.point})`;
}

export class AdvanceClockCommand implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    system.clock.advance(this.ms);
    if (this.ms <= SETTINGS.ttlSeconds * 1000) return;
    // Past retention a key with a final answer is forgotten; one the client never saw finish may be
    // abandoned (and now replaceable by any body) or still in flight (and keep its body).
    for (const [key, state] of model.keys) {
      if (!state.final) {
        state.anyVariant = true;
        continue;
      }
      model.keys.delete(key);
      // An erased key's answer left no tombstone (the erasure removed it, or the record finished already erased).
      if (!state.erased && !state.answeredErased) model.tombstones.set(key, (model.tombstones.get(key) ?? new Set()).add(state.variant));
    }
  }
  toString = () => `advanceClock(${this.ms} ms)`;
}

export class ReaperCommand implements Cmd {
  constructor(readonly instance: number) {}
  check = () => true;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const run = await system.reap(this.instance);
    // A crash armed on the instance fires in the reaper as well as in a request: the pass reports it as an error.
    const crashed = system.crashed(this.instance);
    if (crashed) model.armedCrash[this.instance] = null;
    if (run.error > (crashed ? 1 : 0)) throw new Error(`reaper pass on instance ${this.instance} had ${run.error} errors`);
  }
  toString = () => `reap(i${this.instance})`;
}

export class OutageCommand implements Cmd {
  constructor(readonly on: boolean) {}
  check = (model: Readonly<Model>) => model.outage !== this.on;
  // Sent as often on as off would keep the provider down half of every run.
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    model.outage = this.on;
    system.providerOutage(this.on);
  }
  toString = () => `providerOutage(${this.on})`;
}

export class EraseCommand implements Cmd {
  constructor(
    readonly customer: number,
    /** Erase at the very millisecond of the command before it (the clock does not tick around it). */
    readonly options: { sameMillisecond?: boolean } = {},
  ) {}
  check = () => true;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const status = await system.erase(CUSTOMERS[this.customer], { tick: !this.options.sameMillisecond });
    if (status !== 200) throw new Error(`erasure answered ${status}`);
    model.erased.add(CUSTOMERS[this.customer]);
    for (const variants of model.tombstones.values()) {
      for (const variant of variants) if (VARIANTS[variant].customer === this.customer) variants.delete(variant);
    }
    // Every key of the customer, finished or still in flight, answers 410 or a body without the id from now on.
    for (const [, state] of model.keys) {
      if (VARIANTS[state.variant].customer !== this.customer) continue;
      state.anyVariant = true;
      state.erased = true;
    }
  }
  toString = () => `erase(${CUSTOMERS[this.customer]})`;
}

export function commandArbitraries(): fc.Arbitrary<Cmd>[] {
  const instance = fc.integer({ min: 0, max: 1 });
  const send = fc
    .tuple(
      instance,
      fc.constantFrom(...KEYS),
      fc.integer({ min: 0, max: VARIANTS.length - 1 }),
      fc.constantFrom('none', 'none', 'before', 'after'),
    )
    .map(([i, key, variant, hold]) => new SendCommand(i, key, variant, hold));
  // fc.commands picks among these uniformly: requests are listed four times to be about half of a run.
  return [
    send,
    send,
    send,
    send,
    fc.integer({ min: 0, max: MAX_ZOMBIES - 1 }).map((index) => new ResumeCommand(index)),
    fc.tuple(instance, fc.constantFrom(...CRASH_POINTS)).map(([i, point]) => new CrashCommand(i, point)),
    fc
      .constantFrom(1_000, SETTINGS.leaseMs + 1, SETTINGS.resumeWindowMs + 1, SETTINGS.ttlSeconds * 1000 + SETTINGS.leaseMs + 1)
      .map((ms) => new AdvanceClockCommand(ms)),
    instance.map((i) => new ReaperCommand(i)),
    fc.boolean().map((on) => new OutageCommand(on)),
    fc.integer({ min: 0, max: 1 }).map((customer) => new EraseCommand(customer)),
  ];
}

/** The promise, on the database: after every command, and settled once the run is drained. */
export async function checkInvariants(model: Model, system: ProtocolSystem, settled: boolean): Promise<void> {
  const { db, simulatorDb } = system.primary;
  const violations = await findViolations({ db, simulatorDb, requireSettled: settled, now: system.clock.now() });
  for (const customer of model.erased) {
    const left =
      (await db.collection('orders').countDocuments({ customerId: customer })) +
      (await db.collection('outbox_events').countDocuments({ 'payload.customerId': customer }));
    if (left > 0) violations.push(`erased customer ${customer} still appears in ${left} documents`);
  }
  if (violations.length > 0) throw new Error(`invariants broken:\n${violations.join('\n')}`);
}

/** Drains zombies (judging their late replies), lets the reaper settle, then checks the settled invariants. */
export async function settle(model: Model, system: ProtocolSystem): Promise<void> {
  const zombies = model.zombies.splice(0);
  const replies = await system.drain();
  replies.forEach((reply, index) => judge(model, zombies[index].key, zombies[index].variant, reply, false, true));
  await checkInvariants(model, system, true);
}
