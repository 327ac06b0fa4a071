import fc from 'fast-check';
import type { FaultPoint } from '../../src/config/configuration.js';
import { SubjectDigests } from '@idempotent-orders/nest-idempotency';
import { tombstoneScope } from '@idempotent-orders/nest-idempotency/testing';
import { findViolations } from '../support/invariants.js';
import {
  Chooser,
  CUSTOMERS,
  erase,
  initialState,
  KEYS,
  Mismatch,
  reap,
  resumeZombie,
  serve,
  VARIANTS,
  type Expect,
  type ModelState,
  type RecordModel,
  type RequestContext,
} from './oracle.js';
import { SETTINGS, type ProtocolSystem, type Reply } from './system.js';

export { CUSTOMERS, KEYS, VARIANTS } from './oracle.js';

/**
 * The model-based test's model and commands. The judge predicts: for every
 * request it computes, from the history the run generated, the one reply the
 * contract allows (oracle.ts), and fails on anything else - status, code,
 * which order, amount and items of that very body, Idempotent-Replayed,
 * Retry-After, Location. After every command it also compares the model's
 * records, leases and tombstones with the database, and runs the invariant
 * checker.
 */
const CRASH_POINTS: FaultPoint[] = ['after-claim', 'after-charge', 'after-charged', 'before-response'];
const MAX_ZOMBIES = 3;
const TENANT = 'acme';
const OPERATION = 'orders.create';
const PSEUDONYM = /^erased_[0-9a-f]+$/;

export class Model {
  state: ModelState = initialState();
  /** Orders that named a customer when that customer was erased: never again may they (or their events) name them. */
  erasedOrders = new Map<string, string>();
}

type Cmd = fc.AsyncCommand<Model, ProtocolSystem>;

/**
 * Runs the prediction on a copy of the model once per branch (Chooser) until
 * one branch's expectation matches what the system did; that copy becomes the
 * model. Fails with every branch's reason otherwise.
 */
function predict(model: Model, what: string, simulate: (s: ModelState, ch: Chooser) => string | null): void {
  let path: number[] = [];
  const reasons: string[] = [];
  for (;;) {
    const s = structuredClone(model.state);
    const ch = new Chooser(path);
    let reason: string | null;
    try {
      reason = simulate(s, ch);
    } catch (error) {
      if (!(error instanceof Mismatch)) throw error;
      reason = error.message;
    }
    if (reason === null) {
      model.state = s;
      return;
    }
    reasons.push(reason);
    const next = ch.next();
    if (!next) throw new Error(`${what}: ${reasons.join('\n  or: ')}\nmodel: ${describe(model.state)}`);
    path = next;
  }
}

function describe(s: ModelState): string {
  return JSON.stringify(
    { now: s.now, outage: s.outage, erasedAt: s.erasedAt, keys: s.keys, zombies: s.zombies.length },
    (key, value: unknown) => (key === 'order' && typeof value === 'object' && value !== null ? { ...(value as object) } : value),
  ).slice(0, 3000);
}

function parse(body: string): Record<string, unknown> | null {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Null when the reply is exactly what `e` predicts (and the model learns what it reveals), else why not. */
export function judge(e: Expect, reply: Reply, variantIndex: number): string | null {
  const body = parse(reply.body);
  const got = `${reply.status} ${reply.body.slice(0, 240)} (replayed ${reply.replayed}, location ${reply.location}, retry-after ${reply.retryAfter})`;
  const no = (why: string) => `${why}; got ${got}`;
  const code = body?.code;
  if (reply.status !== 201) {
    for (const customer of CUSTOMERS) if (reply.body.includes(customer)) return no(`a ${reply.status} that names a customer`);
  }
  switch (e.kind) {
    case 'crash':
      return reply.status === 500 ? null : no('expected the crashed request to die (500)');
    case 'held':
      return no('expected the request to be held at the provider call');
    case 'in_use':
      if (reply.status !== 409 || code !== 'idempotency_key_in_use') return no('expected 409 idempotency_key_in_use');
      return reply.retryAfter === '1' ? null : no('expected Retry-After: 1 on 409 idempotency_key_in_use');
    case 'reused':
      return reply.status === 422 && code === 'idempotency_key_reused' ? null : no('expected 422 idempotency_key_reused');
    case 'outage':
      if (reply.status !== 503 || code !== 'payment_provider_unavailable') return no('expected 503 payment_provider_unavailable');
      return reply.retryAfter === '1' ? null : no('expected Retry-After: 1 on the outage 503');
    case 'erased410':
      if (reply.status !== 410 || code !== 'response_erased') return no('expected 410 response_erased');
      return reply.replayed === e.replayed ? null : no(`expected Idempotent-Replayed ${e.replayed} on the 410`);
    case 'expired':
      return judgeExpired(e, reply, body, no);
    case 'final':
      return judgeFinal(e, reply, body, variantIndex, no);
  }
}

function judgeExpired(
  e: Extract<Expect, { kind: 'expired' }>,
  reply: Reply,
  body: Record<string, unknown> | null,
  no: (why: string) => string,
) {
  if (reply.status !== 409 || body?.code !== 'idempotency_key_expired')
    return no('expected 409 idempotency_key_expired (a late retry of an answered body)');
  if (reply.replayed) return no('a tombstone answer is not a replay');
  if (body.originalStatus !== e.tomb.status) return no(`expected originalStatus ${e.tomb.status}`);
  if (e.tomb.status !== 201) return reply.location === undefined ? null : no('a 402 leaves no Location');
  // A privacy-safe tombstone may keep the location (it names an order, not a person) or not.
  if (e.tomb.erased && reply.location === undefined) return null;
  const order = e.tomb.order;
  if (order.id !== undefined) return reply.location === `/v1/orders/${order.id}` ? null : no(`expected Location /v1/orders/${order.id}`);
  const id = /^\/v1\/orders\/(ord_[0-9a-f]{24})$/.exec(reply.location ?? '')?.[1];
  if (!id) return no('expected the Location of the original order');
  order.id = id;
  return null;
}

function judgeFinal(
  e: Extract<Expect, { kind: 'final' }>,
  reply: Reply,
  body: Record<string, unknown> | null,
  variantIndex: number,
  no: (why: string) => string,
): string | null {
  if (reply.status !== e.status) return no(`expected ${e.status}`);
  if (reply.replayed !== e.replayed)
    return no(e.replayed ? 'expected the stored answer replayed (Idempotent-Replayed: true)' : 'a first answer is no replay');
  const seen = e.rec.seen;
  if (seen) {
    if (reply.body !== seen.body) return no(`expected the stored bytes again: ${seen.body.slice(0, 200)}`);
    return reply.location === seen.location ? null : no(`expected Location ${seen.location} again`);
  }
  if (!body) return no('expected a JSON body');
  const variant = VARIANTS[variantIndex];
  const order = e.order;
  if (e.status === 402) {
    if (body.code !== 'card_declined' || typeof body.orderId !== 'string') return no('expected 402 card_declined naming its order');
    if (order.id !== undefined && body.orderId !== order.id) return no(`expected order ${order.id}`);
    if (reply.location !== undefined) return no('a 402 has no Location');
    order.id = body.orderId;
  } else {
    const id = body.id;
    if (typeof id !== 'string' || !/^ord_[0-9a-f]{24}$/.test(id)) return no('expected an order id');
    if (order.id !== undefined && id !== order.id) return no(`expected order ${order.id} (the attempt the key holds)`);
    if (reply.location !== `/v1/orders/${id}`) return no(`expected Location /v1/orders/${id}`);
    if (body.state !== 'saved' || body.currency !== variant.body.currency) return no('expected a saved order in the body currency');
    if (body.amountMinor !== variant.amountMinor) return no(`expected amountMinor ${variant.amountMinor} (the sum of this body's items)`);
    if (JSON.stringify(body.items) !== JSON.stringify(variant.items)) return no("expected this body's items");
    const customer = body.customerId;
    if (order.erased ? !PSEUDONYM.test(String(customer)) : customer !== variant.body.customerId)
      return no(order.erased ? 'expected the pseudonym of the erased customer' : `expected customer ${variant.body.customerId}`);
    order.id = id;
  }
  e.rec.seen = { status: reply.status, body: reply.body, location: reply.location };
  return null;
}

function context(
  instance: number,
  armed: FaultPoint | null,
  fired: boolean,
  ch: Chooser,
  hold: RequestContext['hold'] = 'none',
): RequestContext {
  return { instance, armed, fired, hold, ch };
}

/** The observed crash must be the one the model's path predicted, and the other way round. */
function crashAgrees(e: Expect, fired: boolean): string | null {
  if (fired && e.kind !== 'crash') return `a crash fired where the model's path (${e.kind}) never reaches it`;
  return null;
}

export class SendCommand implements Cmd {
  constructor(
    readonly instance: number,
    readonly key: string,
    readonly variant: number,
    readonly hold: 'none' | 'before' | 'after',
  ) {}
  check = (model: Readonly<Model>) => this.hold === 'none' || model.state.zombies.length < MAX_ZOMBIES;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const { body } = VARIANTS[this.variant];
    const armed = model.state.armedCrash[this.instance];
    const result =
      this.hold === 'none'
        ? await system.send(this.instance, this.key, body)
        : await system.sendAndHold(this.instance, this.key, body, this.variant, this.hold);
    const fired = system.crashed(this.instance);
    predict(model, this.toString(), (s, ch) => {
      s.armedCrash[this.instance] = null;
      const e = serve(s, context(this.instance, armed, fired, ch, this.hold), this.key, this.variant, s.now, 0);
      if ('release' in result) {
        if (e.kind !== 'held') return `held at the provider call, but the model predicted ${e.kind}`;
        s.zombies.push(e.zombie);
        return null;
      }
      return crashAgrees(e, fired) ?? judge(e, result, this.variant);
    });
  }
  toString = () => `send(i${this.instance}, ${this.key}, v${this.variant}${this.hold === 'none' ? '' : `, hold ${this.hold}`})`;
}

/** Two requests of one key sent at once, one on each instance: exactly one may run, the other sees it. */
export class RaceCommand implements Cmd {
  constructor(
    readonly key: string,
    readonly variants: [number, number],
  ) {}
  check = (model: Readonly<Model>) => model.state.armedCrash.every((armed) => armed === null);
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const replies = await Promise.all([0, 1].map((i) => system.send(i, this.key, VARIANTS[this.variants[i]].body)));
    for (const i of [0, 1]) if (system.crashed(i)) throw new Error('no crash was armed for the race');
    predict(model, this.toString(), (s, ch) => {
      const first = ch.pick(2);
      const second = 1 - first;
      const e1 = serve(s, context(first, null, false, ch), this.key, this.variants[first], s.now, 0);
      const ran = (e1.kind === 'final' && !e1.replayed) || e1.kind === 'outage';
      // The loser read the winner's record while it ran (409 for its body, 422 for another), or after it.
      const sawItRunning = ran && ch.pick(2) === 1;
      const e2: Expect = sawItRunning
        ? { kind: this.variants[0] === this.variants[1] ? 'in_use' : 'reused' }
        : serve(s, context(second, null, false, ch), this.key, this.variants[second], s.now, 0);
      return judge(e1, replies[first], this.variants[first]) ?? judge(e2, replies[second], this.variants[second]);
    });
  }
  toString = () => `race(${this.key}, v${this.variants[0]} on i0, v${this.variants[1]} on i1)`;
}

export class ResumeCommand implements Cmd {
  constructor(readonly index: number) {}
  check = (model: Readonly<Model>) => this.index < model.state.zombies.length;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const { instance } = model.state.zombies[this.index];
    const armed = model.state.armedCrash[instance];
    const { reply } = await system.resume(this.index);
    // A crash armed on the instance after the request was held may fire in it now.
    const fired = system.crashed(instance);
    predict(model, this.toString(), (s, ch) => {
      const [zombie] = s.zombies.splice(this.index, 1);
      s.armedCrash[instance] = null;
      const e = resumeZombie(s, context(instance, armed, fired, ch), zombie);
      return crashAgrees(e, fired) ?? judge(e, reply, zombie.variant);
    });
  }
  toString = () => `resume(${this.index})`;
}

export class CrashCommand implements Cmd {
  constructor(
    readonly instance: number,
    readonly point: FaultPoint,
  ) {}
  check = (model: Readonly<Model>) => model.state.armedCrash[this.instance] === null;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    model.state.armedCrash[this.instance] = this.point;
    system.armCrash(this.instance, this.point);
  }
  toString = () => `crashNext(i${this.instance}, ${this.point})`;
}

export class AdvanceClockCommand implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    system.clock.advance(this.ms);
    model.state.now += this.ms;
  }
  toString = () => `advanceClock(${this.ms} ms)`;
}

export class ReaperCommand implements Cmd {
  constructor(readonly instance: number) {}
  // A crash inside a reaper pass is left to the real-process chaos tests: the in-process pass would go on
  // with the next record, which a dead process does not.
  check = (model: Readonly<Model>) => model.state.armedCrash[this.instance] === null;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    const run = await system.reap(this.instance);
    predict(model, this.toString(), (s) => {
      const expected = reap(s);
      if (run.error > 0) return `reaper pass had ${run.error} errors`;
      if (run.completed !== expected.completed || run.abandoned !== expected.abandoned)
        return `reaper completed ${run.completed} and abandoned ${run.abandoned}; the model expected ${expected.completed} and ${expected.abandoned}`;
      return null;
    });
  }
  toString = () => `reap(i${this.instance})`;
}

export class OutageCommand implements Cmd {
  constructor(readonly on: boolean) {}
  check = (model: Readonly<Model>) => model.state.outage !== this.on;
  async run(model: Model, system: ProtocolSystem): Promise<void> {
    model.state.outage = this.on;
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
    const customerId = CUSTOMERS[this.customer];
    const named = await system.primary.db.collection<{ _id: string }>('orders').find({ customerId }).project({ _id: 1 }).toArray();
    for (const { _id } of named) model.erasedOrders.set(_id, customerId);
    const tick = !this.options.sameMillisecond;
    const status = await system.erase(customerId, { tick });
    if (status !== 200) throw new Error(`erasure answered ${status}`);
    const s = model.state;
    if (tick) s.now += 1;
    erase(s, this.customer);
    if (tick) s.now += 1;
  }
  toString = () => `erase(${CUSTOMERS[this.customer]}${this.options.sameMillisecond ? ', same millisecond' : ''})`;
}

/** Clock steps: small ones, exact lease and retention boundaries, and jumps that add up past retention and tombstones. */
export const CLOCK_STEPS = [
  1,
  1_000,
  SETTINGS.leaseMs - 1,
  SETTINGS.leaseMs,
  SETTINGS.leaseMs + 1,
  SETTINGS.resumeWindowMs + 1,
  (SETTINGS.ttlSeconds * 1000) / 2,
  SETTINGS.ttlSeconds * 1000,
  SETTINGS.ttlSeconds * 1000 + SETTINGS.leaseMs + 1,
];

export function commandArbitraries(): fc.Arbitrary<Cmd>[] {
  const instance = fc.integer({ min: 0, max: 1 });
  const variant = fc.integer({ min: 0, max: VARIANTS.length - 1 });
  const key = fc.constantFrom(...KEYS);
  // Two thirds of the requests are held at the provider call: the interleavings live there.
  const send = fc
    .tuple(instance, key, variant, fc.constantFrom('none', 'before', 'after'))
    .map(([i, k, v, hold]) => new SendCommand(i, k, v, hold));
  const reaper = instance.map((i) => new ReaperCommand(i));
  // fc.commands picks among these uniformly: requests are listed four times to be about a third of a run,
  // reaper passes twice (a held request, the lease passing and a pass is what finds the planted defect).
  return [
    send,
    send,
    send,
    send,
    fc.integer({ min: 0, max: MAX_ZOMBIES - 1 }).map((index) => new ResumeCommand(index)),
    fc.tuple(instance, fc.constantFrom(...CRASH_POINTS)).map(([i, point]) => new CrashCommand(i, point)),
    fc.constantFrom(...CLOCK_STEPS).map((ms) => new AdvanceClockCommand(ms)),
    reaper,
    reaper,
    fc.boolean().map((on) => new OutageCommand(on)),
    fc
      .tuple(fc.integer({ min: 0, max: 1 }), fc.boolean(), fc.integer({ min: 0, max: 9 }))
      .map(([customer, , tie]) => new EraseCommand(customer, { sameMillisecond: tie === 0 })),
    fc.tuple(key, variant, variant).map(([k, a, b]) => new RaceCommand(k, [a, b])),
  ];
}

/** The promise, on the database: the invariant checker, then the model's records, leases and tombstones against the store. */
export async function checkInvariants(model: Model, system: ProtocolSystem, settled: boolean): Promise<void> {
  const { db, simulatorDb } = system.primary;
  const s = model.state;
  if (system.clock.offset !== s.now) throw new Error(`model clock ${s.now} ms, system clock ${system.clock.offset} ms`);
  const violations = await findViolations({
    db,
    simulatorDb,
    requireSettled: settled,
    now: system.clock.now(),
    tombstoneSeconds: SETTINGS.tombstoneSeconds,
  });
  violations.push(...(await compareWithStore(model, system)));
  if (model.erasedOrders.size > 0) {
    const ids = [...model.erasedOrders.keys()];
    for (const order of await db
      .collection<{ _id: string; customerId: string }>('orders')
      .find({ _id: { $in: ids } })
      .toArray()) {
      if (order.customerId === model.erasedOrders.get(order._id)) violations.push(`order ${order._id} names its erased customer again`);
    }
    const events = await db
      .collection<{ payload: { id: string; customerId: string } }>('outbox_events')
      .find({ 'payload.id': { $in: ids } })
      .toArray();
    for (const event of events) {
      if (event.payload.customerId === model.erasedOrders.get(event.payload.id))
        violations.push(`event of order ${event.payload.id} names its erased customer`);
    }
  }
  if (settled) {
    for (const [key, k] of Object.entries(s.keys))
      if (k.rec?.status === 'pending') violations.push(`model: key ${key} still pending after settling`);
    violations.push(...(await system.mustStayZero()).map((line) => `must stay 0: ${line}`));
  }
  if (violations.length > 0) throw new Error(`invariants broken:\n${violations.join('\n')}\nmodel: ${describe(s)}`);
}

interface StoredRecord {
  status: string;
  attempt: number;
  expiresAt: Date;
  lease: { expiresAt: Date; resumableUntil?: Date | null } | null;
  response: { status: number } | null;
}

/** What the model says the store holds for each key, against what it holds. */
async function compareWithStore(model: Model, system: ProtocolSystem): Promise<string[]> {
  const { db } = system.primary;
  const s = model.state;
  const out: string[] = [];
  const time = (date: Date | null | undefined) => (date ? date.getTime() - system.clock.at(0).getTime() : null);
  for (const key of KEYS) {
    const k = s.keys[key];
    const stored = await db.collection<StoredRecord>('idempotency_records').findOne({ tenant: TENANT, clientKey: key });
    const rec = k?.rec ?? null;
    if (!rec || !stored) {
      if (rec || stored) out.push(`key ${key}: the model ${rec ? 'has' : 'has no'} record, the store ${stored ? 'has' : 'has none'}`);
    } else {
      out.push(...compareRecord(key, rec, stored, time));
    }
    const scope = tombstoneScope({ tenant: TENANT, operation: OPERATION, clientKey: key });
    const tombs = await db.collection<{ subject: string | null; status: number }>('idempotency_tombstones').find({ scope }).toArray();
    const named = tombs.filter((tomb) => tomb.subject !== null).map((tomb) => tomb.status);
    const expected = (k?.tombs ?? []).filter((tomb) => !tomb.erased).map((tomb) => tomb.status);
    if (JSON.stringify(named.sort()) !== JSON.stringify(expected.sort()))
      out.push(`key ${key}: tombstones naming a subject ${JSON.stringify(named)}, the model expected ${JSON.stringify(expected)}`);
    for (const tomb of k?.tombs ?? []) {
      const customer = CUSTOMERS[VARIANTS[tomb.variant].customer];
      const forms = system.primary.app.get(SubjectDigests).forms(TENANT, customer);
      if (tomb.erased && tombs.some((t) => t.subject !== null && forms.includes(t.subject)))
        out.push(`key ${key}: a tombstone still names erased customer ${customer}`);
    }
  }
  return out;
}

function compareRecord(
  key: string,
  rec: RecordModel,
  stored: StoredRecord,
  time: (date: Date | null | undefined) => number | null,
): string[] {
  const out: string[] = [];
  const status = { pending: 'pending', complete: 'complete', declined: 'failed', abandoned: 'failed' }[rec.status];
  const answers: (number | null)[] =
    rec.status === 'pending' || rec.status === 'abandoned'
      ? [null]
      : rec.redacted === 'maybe'
        ? [410, rec.status === 'complete' ? 201 : 402]
        : [rec.redacted ? 410 : rec.status === 'complete' ? 201 : 402];
  if (stored.status !== status || !answers.includes(stored.response?.status ?? null))
    out.push(`key ${key}: the store holds ${stored.status} ${stored.response?.status ?? 'without response'}, the model ${rec.status}`);
  if (stored.attempt !== rec.attempt) out.push(`key ${key}: attempt ${stored.attempt}, the model ${rec.attempt}`);
  if (time(stored.expiresAt) !== rec.expiresAt)
    out.push(`key ${key}: retention ends at ${time(stored.expiresAt)}, the model ${rec.expiresAt}`);
  if (rec.status === 'pending') {
    const lease = stored.lease;
    if (time(lease?.expiresAt) !== rec.lease?.expiresAt)
      out.push(`key ${key}: lease ends at ${time(lease?.expiresAt)}, the model ${rec.lease?.expiresAt}`);
    if (time(lease?.resumableUntil) !== (rec.lease?.resumableUntil ?? null))
      out.push(`key ${key}: resumable until ${time(lease?.resumableUntil)}, the model ${rec.lease?.resumableUntil}`);
  }
  return out;
}

/** Drains zombies (judging their late replies), lets the reaper settle, then checks the settled invariants. */
export async function settle(model: Model, system: ProtocolSystem): Promise<void> {
  const replies = await system.drain();
  predict(model, 'settle', (s, ch) => {
    s.outage = false;
    s.armedCrash = [null, null];
    const zombies = s.zombies.splice(0);
    for (const [index, zombie] of zombies.entries()) {
      const reason = judge(resumeZombie(s, context(zombie.instance, null, false, ch), zombie), replies[index], zombie.variant);
      if (reason) return `drained zombie ${index} (${zombie.key}, v${zombie.variant}): ${reason}`;
    }
    s.now += Math.max(SETTINGS.leaseMs, SETTINGS.resumeWindowMs) + 1;
    reap(s);
    return null;
  });
  await checkInvariants(model, system, true);
}
