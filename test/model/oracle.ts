import type { FaultPoint } from '../../src/config/configuration.js';
import { orderBody } from '../support/fixtures.js';
import { SETTINGS } from './system.js';

/**
 * The model's prediction of the service: from the history the test itself
 * generated (requests, zombies, crashes, clock, reaper passes, outages,
 * erasures) it works out the record, the order, the provider charge and the
 * tombstones of every key, and so the one reply each request must get. It
 * is a second, much smaller implementation of the README's contract, written
 * from the contract: where they disagree, one of them is wrong, and the run
 * says so and shrinks it.
 *
 * The only hidden things a client cannot know are where the service itself
 * is free to choose (which of two racing requests wins; a behaviour the
 * contract leaves open); there the model branches (Chooser) and accepts a
 * reply only if one branch predicts it exactly, then follows that branch.
 */
export const KEYS = ['k-a', 'k-b', 'k-c'];
export const CUSTOMERS = ['cus_model_a', 'cus_model_b'];
export interface Variant {
  customer: number;
  body: ReturnType<typeof orderBody>;
  items: { sku: string; quantity: number; unitPriceMinor: number }[];
  amountMinor: number;
  declined: boolean;
}
function variant(customer: number, overrides: Record<string, unknown> = {}): Variant {
  const body = orderBody({ customerId: CUSTOMERS[customer], ...overrides });
  const items = body.items;
  return {
    customer,
    body,
    items,
    amountMinor: items.reduce((sum, item) => sum + item.quantity * item.unitPriceMinor, 0),
    declined: body.paymentMethod.token === 'tok_decline',
  };
}
/** Body variants: two customers, two amounts, a card that is declined. */
export const VARIANTS: Variant[] = [
  variant(0),
  variant(0, { items: [{ sku: 'sku_2', quantity: 1, unitPriceMinor: 999 }] }),
  variant(1, { paymentMethod: { token: 'tok_decline' } }),
  variant(1),
];

export const MAX_ROUNDS = 4;

export interface OrderModel {
  variant: number;
  state: 'pending' | 'charged' | 'saved' | 'failed';
  /** The provider holds a succeeded charge under this order's charge key. */
  charged: boolean;
  /** The reaper cancelled the charge key (nothing can charge it any more). */
  canceled: boolean;
  /** Its customer was erased after it was created: it carries a pseudonym. */
  erased: boolean;
  createdAt: number;
  /** Learnt from the first reply that names it. */
  id?: string;
}

export interface LeaseModel {
  expiresAt: number;
  resumableUntil: number | null;
  holder: number;
}

export interface RecordModel {
  /** The body variant whose fingerprint the record holds. */
  owner: number;
  status: 'pending' | 'complete' | 'declined' | 'abandoned';
  createdAt: number;
  /** Retention end: createdAt + TTL, and at least TTL after it finished. */
  expiresAt: number;
  lease: LeaseModel | null;
  attempt: number;
  order: OrderModel;
  /** Its customer was erased: its fingerprint is no longer its body's plain digest, its subject is gone. */
  erased: boolean;
  /**
   * Its stored answer became a 410 (it was final when the erasure came). 'maybe': erased in flight and
   * finished, then its customer erased again - the README says a later erasure finds it, the code today
   * does not; the first reply decides which, and the model keeps to it.
   */
  redacted: boolean | 'maybe';
  /** The bytes clients get on replay, once one client saw them (a reaper's or a crashed request's answer is unseen). */
  seen?: SeenAnswer;
}

export interface SeenAnswer {
  status: number;
  body: string;
  location?: string;
}

export interface TombModel {
  variant: number;
  status: number;
  order: OrderModel;
  expiresAt: number;
  /** Written for, or turned into, a privacy-safe tombstone by an erasure of its customer. */
  erased: boolean;
}

export interface KeyModel {
  rec: RecordModel | null;
  tombs: TombModel[];
}

export interface ZombieModel {
  instance: number;
  key: string;
  variant: number;
  receivedAt: number;
  token: number;
  order: OrderModel;
  phase: 'before' | 'after';
  /** For a zombie held after the provider call: what the provider answered. */
  result?: ChargeResult;
}

/** Everything the model knows: plain data, so a branch is a structuredClone. */
export interface ModelState {
  now: number;
  keys: Record<string, KeyModel>;
  zombies: ZombieModel[];
  armedCrash: (FaultPoint | null)[];
  outage: boolean;
  /** Latest erasure time per customer index. */
  erasedAt: Record<number, number>;
  /** Orders (by id, once known) that existed when their customer was erased: they must never name them again. */
  nextToken: number;
}

export function initialState(): ModelState {
  return { now: 0, keys: {}, zombies: [], armedCrash: [null, null], outage: false, erasedAt: {}, nextToken: 1 };
}

export type Expect =
  | { kind: 'final'; status: 201 | 402; order: OrderModel; rec: RecordModel; replayed: boolean }
  | { kind: 'erased410'; replayed: boolean }
  | { kind: 'in_use' }
  | { kind: 'reused' }
  | { kind: 'expired'; tomb: TombModel }
  | { kind: 'outage' }
  | { kind: 'crash' }
  | { kind: 'held'; zombie: ZombieModel };

type ChargeResult = 'succeeded' | 'declined' | 'canceled';

/** Branch points: the judge runs the prediction once per combination of choices until one matches. */
export class Chooser {
  private index = 0;
  readonly counts: number[] = [];
  constructor(private readonly path: number[]) {}
  pick(options: number): number {
    const i = this.index++;
    this.counts[i] = options;
    return this.path[i] ?? 0;
  }
  /** The next path in the enumeration, or null when every combination was tried. */
  next(): number[] | null {
    const path = this.counts.map((_, i) => this.path[i] ?? 0);
    for (let i = path.length - 1; i >= 0; i--) {
      if (path[i] + 1 < this.counts[i]) return [...path.slice(0, i), path[i] + 1];
    }
    return null;
  }
}

class Crashed extends Error {}
class Held extends Error {
  constructor(readonly zombie: ZombieModel) {
    super('held');
  }
}
/** The model's own inconsistency with an observation (a crash that fired where no request could reach it). */
export class Mismatch extends Error {}

export interface RequestContext {
  instance: number;
  /** The crash armed on the request's instance, and whether it fired (observed). */
  armed: FaultPoint | null;
  fired: boolean;
  hold: 'none' | 'before' | 'after';
  ch: Chooser;
}

const LEASE = SETTINGS.leaseMs;
const TTL = SETTINGS.ttlSeconds * 1000;
const WINDOW = SETTINGS.resumeWindowMs;
const TOMB = SETTINGS.tombstoneSeconds * 1000;

/** A crash point on the path: a crash armed there fires (and the path ends), and one armed there must fire. */
function at(ctx: RequestContext, point: FaultPoint): void {
  if (ctx.armed !== point) return;
  if (!ctx.fired) throw new Mismatch(`the crash armed at ${point} did not fire where the model's path passes it`);
  ctx.armed = null;
  throw new Crashed();
}

function keyModel(s: ModelState, key: string): KeyModel {
  return (s.keys[key] ??= { rec: null, tombs: [] });
}

function newOrder(s: ModelState, variantIndex: number): OrderModel {
  return { variant: variantIndex, state: 'pending', charged: false, canceled: false, erased: false, createdAt: s.now };
}

function finishRetention(s: ModelState, rec: RecordModel): void {
  rec.expiresAt = Math.max(rec.expiresAt, s.now + TTL);
}

/** Every final stored answer leaves one tombstone per (key, body); an erased record's is privacy-safe (issue 21). */
function writeTomb(s: ModelState, k: KeyModel, rec: RecordModel, status: number): void {
  k.tombs = k.tombs.filter((tomb) => tomb.variant !== rec.owner);
  k.tombs.push({ variant: rec.owner, status, order: rec.order, expiresAt: rec.expiresAt + TOMB, erased: rec.erased });
}

function chargeAtProvider(order: OrderModel): ChargeResult {
  if (VARIANTS[order.variant].declined) return 'declined';
  if (order.canceled) return 'canceled';
  order.charged = true;
  return 'succeeded';
}

/** A fresh request (or a zombie going round again): the reply it must get, with the model state moved on. */
export function serve(s: ModelState, ctx: RequestContext, key: string, v: number, receivedAt: number, round: number): Expect {
  try {
    return serveRound(s, ctx, key, v, receivedAt, round);
  } catch (error) {
    if (error instanceof Crashed) return { kind: 'crash' };
    if (error instanceof Held) return { kind: 'held', zombie: error.zombie };
    throw error;
  }
}

/** A zombie let go at the provider call: it finishes its attempt if it still owns the lease, else goes round again. */
export function resumeZombie(s: ModelState, ctx: RequestContext, zombie: ZombieModel): Expect {
  try {
    const k = keyModel(s, zombie.key);
    let result = zombie.result;
    if (zombie.phase === 'before') {
      if (s.outage) return outage(s, k, zombie.token);
      result = chargeAtProvider(zombie.order);
    }
    return afterCharge(s, ctx, k, zombie.key, zombie.order, zombie.token, zombie.variant, zombie.receivedAt, 0, result!);
  } catch (error) {
    if (error instanceof Crashed) return { kind: 'crash' };
    throw error;
  }
}

function serveRound(s: ModelState, ctx: RequestContext, key: string, v: number, receivedAt: number, round: number): Expect {
  if (round >= MAX_ROUNDS) return { kind: 'in_use' };
  const k = keyModel(s, key);
  const rec = k.rec;
  const now = s.now;
  if (!rec) return afresh(s, ctx, k, key, v, receivedAt, round);
  const finished = rec.status !== 'pending';
  if (finished && rec.expiresAt <= now) return afresh(s, ctx, k, key, v, receivedAt, round);
  if (finished && rec.redacted === 'maybe') rec.redacted = ctx.ch.pick(2) === 0;
  // An erased final answer is a 410: the record stays final, so nothing runs again. The erased fingerprint is
  // kept keyed (issue 21): another body gets 422, and the same body's 410 is a stored answer like any other,
  // replayed by the look-up before validation (a zombie's second round replays it from execute()).
  if (finished && rec.redacted) {
    if (v !== rec.owner) return { kind: 'reused' };
    const erased: Expect = { kind: 'erased410', replayed: true };
    return round === 0 ? erased : inExecute(ctx, erased);
  }
  if (rec.status === 'abandoned' && rec.erased) {
    // No answer to give, and no attempt may start with the erased data: its own body gets 410 (from execute(),
    // which decides it), another body 422.
    if (v !== rec.owner) return { kind: 'reused' };
    return inExecute(ctx, { kind: 'erased410', replayed: true });
  }
  // Erased in flight, the fingerprint stays keyed (issue 21): another body is still 422, never a takeover.
  if (v !== rec.owner) return { kind: 'reused' };
  if (rec.status === 'complete' || rec.status === 'declined') {
    const expect: Expect = { kind: 'final', status: rec.status === 'complete' ? 201 : 402, order: rec.order, rec, replayed: true };
    // A fresh request's replay is answered by the look-up before validation (an erased record's too: its keyed
    // fingerprint is compared like any other); a zombie's second round replays from execute().
    return round === 0 ? expect : inExecute(ctx, expect);
  }
  if (rec.status === 'abandoned') return claim(s, ctx, k, key, v, receivedAt, round, 'restart');
  if (rec.lease && rec.lease.expiresAt > now) return { kind: 'in_use' };
  const token = s.nextToken++;
  rec.lease = { expiresAt: now + LEASE, resumableUntil: null, holder: token };
  return drive(s, ctx, k, key, rec.order, token, v, receivedAt, round);
}

function afresh(s: ModelState, ctx: RequestContext, k: KeyModel, key: string, v: number, receivedAt: number, round: number): Expect {
  const live = k.tombs.filter((tomb) => tomb.expiresAt > s.now);
  const own = live.find((tomb) => tomb.variant === v);
  if (own) return inExecute(ctx, { kind: 'expired', tomb: own });
  // An erasure keeps each body's tombstone, keyed (issue 21): another body is a new request, as for any tombstone.
  return claim(s, ctx, k, key, v, receivedAt, round, 'fresh');
}

function claim(
  s: ModelState,
  ctx: RequestContext,
  k: KeyModel,
  key: string,
  v: number,
  receivedAt: number,
  round: number,
  kind: 'fresh' | 'restart',
): Expect {
  const erasedAt = s.erasedAt[VARIANTS[v].customer];
  // A request that arrived before (or in the millisecond of) its customer's erasure never starts an attempt after it.
  if (erasedAt !== undefined && erasedAt >= receivedAt) return inExecute(ctx, { kind: 'erased410', replayed: false });
  const token = s.nextToken++;
  const order = newOrder(s, v);
  const lease = { expiresAt: s.now + LEASE, resumableUntil: null, holder: token };
  if (kind === 'restart' && k.rec) {
    Object.assign(k.rec, { status: 'pending', attempt: k.rec.attempt + 1, order, lease, erased: false, redacted: false, seen: undefined });
  } else {
    const fresh = { createdAt: s.now, expiresAt: s.now + TTL, lease, attempt: 1, order, erased: false, redacted: false };
    k.rec = { owner: v, status: 'pending', ...fresh };
  }
  return drive(s, ctx, k, key, order, token, v, receivedAt, round);
}

function drive(
  s: ModelState,
  ctx: RequestContext,
  k: KeyModel,
  key: string,
  order: OrderModel,
  token: number,
  v: number,
  receivedAt: number,
  round: number,
): Expect {
  at(ctx, 'after-claim');
  if (order.state === 'charged') return save(s, ctx, k, key, order, token, v, receivedAt, round);
  // The provider call: where a test hold stops the request.
  if (ctx.hold === 'before') {
    ctx.hold = 'none';
    throw new Held({ instance: ctx.instance, key, variant: v, receivedAt, token, order, phase: 'before' });
  }
  if (s.outage) return outage(s, k, token);
  const result = chargeAtProvider(order);
  if (ctx.hold === 'after') {
    ctx.hold = 'none';
    throw new Held({ instance: ctx.instance, key, variant: v, receivedAt, token, order, phase: 'after', result });
  }
  return afterCharge(s, ctx, k, key, order, token, v, receivedAt, round, result);
}

function owns(k: KeyModel, token: number): boolean {
  return k.rec !== null && k.rec.status === 'pending' && k.rec.lease?.holder === token;
}

/** 503: the lease is given back with a resume window (a CAS: only by its holder). */
function outage(s: ModelState, k: KeyModel, token: number): Expect {
  if (owns(k, token)) k.rec!.lease = { expiresAt: s.now, resumableUntil: WINDOW > 0 ? s.now + WINDOW : null, holder: 0 };
  return { kind: 'outage' };
}

function afterCharge(
  s: ModelState,
  ctx: RequestContext,
  k: KeyModel,
  key: string,
  order: OrderModel,
  token: number,
  v: number,
  receivedAt: number,
  round: number,
  result: ChargeResult,
): Expect {
  const again = () => serveRound(s, ctx, key, v, receivedAt, round + 1);
  if (result === 'declined' || result === 'canceled') {
    // Fenced: a worker that lost its lease changes nothing and reads what the others did.
    if (!owns(k, token)) return again();
    const rec = k.rec!;
    order.state = 'failed';
    finishRetention(s, rec);
    if (result === 'canceled') {
      rec.status = 'abandoned';
      rec.lease = null;
      return again();
    }
    rec.status = 'declined';
    rec.lease = null;
    writeTomb(s, k, rec, 402);
    return inExecute(ctx, { kind: 'final', status: 402, order, rec, replayed: false });
  }
  at(ctx, 'after-charge');
  if (!owns(k, token)) return again();
  order.state = 'charged';
  k.rec!.lease!.expiresAt = s.now + LEASE;
  at(ctx, 'after-charged');
  return save(s, ctx, k, key, order, token, v, receivedAt, round);
}

function save(
  s: ModelState,
  ctx: RequestContext,
  k: KeyModel,
  key: string,
  order: OrderModel,
  token: number,
  v: number,
  receivedAt: number,
  round: number,
): Expect {
  if (!owns(k, token)) return serveRound(s, ctx, key, v, receivedAt, round + 1);
  const rec = k.rec!;
  order.state = 'saved';
  rec.status = 'complete';
  rec.lease = null;
  finishRetention(s, rec);
  writeTomb(s, k, rec, 201);
  return inExecute(ctx, { kind: 'final', status: 201, order, rec, replayed: false });
}

/** A result execute() returns passes the before-response crash point (a thrown 409/422/503 does not). */
function inExecute(ctx: RequestContext, expect: Expect): Expect {
  at(ctx, 'before-response');
  return expect;
}

/** One reaper pass: every pending record whose lease ran out (and whose resume window is over) is reconciled. */
export function reap(s: ModelState): { completed: number; abandoned: number } {
  const run = { completed: 0, abandoned: 0 };
  for (const k of Object.values(s.keys)) {
    const rec = k.rec;
    if (!rec || rec.status !== 'pending' || !rec.lease || rec.lease.expiresAt > s.now) continue;
    if (rec.lease.resumableUntil !== null && rec.lease.resumableUntil > s.now) continue;
    rec.lease = null;
    const order = rec.order;
    if (order.state === 'pending' && !order.charged) {
      // It never charges: it cancels the key, so a stalled worker can never charge it later.
      order.canceled = true;
      order.state = 'failed';
      rec.status = 'abandoned';
      finishRetention(s, rec);
      run.abandoned++;
      continue;
    }
    order.state = 'saved';
    rec.status = 'complete';
    finishRetention(s, rec);
    writeTomb(s, k, rec, 201);
    run.completed++;
  }
  return run;
}

/** An erasure of a customer, at s.now. */
export function erase(s: ModelState, customer: number): void {
  s.erasedAt[customer] = s.now;
  for (const k of Object.values(s.keys)) {
    const rec = k.rec;
    if (rec && VARIANTS[rec.owner].customer === customer) {
      const final = rec.status === 'complete' || rec.status === 'declined';
      if (!rec.erased) rec.redacted = final;
      else if (final && !rec.redacted) rec.redacted = 'maybe';
      rec.erased = true;
    }
    if (rec && VARIANTS[rec.order.variant].customer === customer) rec.order.erased = true;
    for (const tomb of k.tombs) {
      if (VARIANTS[tomb.variant].customer !== customer) continue;
      tomb.erased = true;
      tomb.order.erased = true;
    }
  }
  for (const zombie of s.zombies) if (VARIANTS[zombie.order.variant].customer === customer) zombie.order.erased = true;
}
