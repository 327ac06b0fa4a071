/**
 * The pure half of the benchmark: the results shape, the ratios, the table
 * text, percentiles, the duplicate-order count, and reading a results file
 * back. No I/O here, so bench/report.spec.ts can test all of it quickly.
 */
import type { MongoBackendKind } from '../src/database/embedded-mongo.js';
import { formatPeerComparison } from './peers-report.js';
import { formatSpread, MIN_ROUNDS, roundRatios, spreadOf, verdictOf, type RatioSpread, type RoundFigures, type Verdict } from './spread.js';

export const RESULTS_SCHEMA_VERSION = 2;

export const EMULATOR_CAVEAT =
  'Backend is the jongodb EMULATOR behind the serializing proxy: these figures say nothing about MongoDB. The ' +
  'emulator has no real storage engine (its inserts slow down sharply as a collection grows) and the proxy runs ' +
  "one transaction at a time, so throughput under concurrency is the emulator's, not a database's. The checks " +
  'are binding; compare ratios between runs on the same machine at most, and measure on a real replica set ' +
  '(MONGODB_URI) before drawing conclusions.';

/** One pass/fail check attached to a scenario (all 201, no duplicate orders, ...). */
export interface CheckResult {
  ok: boolean;
  detail: string;
}

export interface ScenarioResult {
  /** Stable id, used by the ratios: e.g. `create-c16`. */
  id: string;
  title: string;
  concurrency: number;
  /** Measured seconds (warm-up excluded). */
  durationSeconds: number;
  /** Completed requests (or committed transactions for the raw driver). */
  requests: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts (raw driver: failed transactions). */
  errors: number;
  non2xx: number;
  /** Response count per HTTP status ("201": 1234); empty for the raw driver. */
  statusCounts: Record<string, number>;
  /**
   * The service process's user + system CPU over the measured window divided
   * by completed requests, in ms: what this project controls, on any store.
   * Null where there is no service process (the floor) or no /proc.
   */
  cpuMsPerRequest: number | null;
  /**
   * Store commands the process sent per completed request, counted at the
   * wire (bench/command-counter.ts), idle traffic left out; absent where not
   * counted (and in files written before it was).
   */
  store?: StoreCounts | null;
  /** The refund rows: what the answers and the store say about the refunds (absent elsewhere). */
  refunds?: RefundFigures | null;
  /** The webhook row: events sent, duplicates among them, and the effects counted in the store (absent elsewhere). */
  webhooks?: WebhookFigures | null;
  /**
   * A row measured in interleaved rounds (bench/rounds.ts): each round's own figures, in order; the
   * row's figures above are all rounds together. Absent for one-window rows and in older files.
   */
  rounds?: RoundFigures[];
  check: CheckResult | null;
}

export interface RefundFigures {
  /** Orders the refunds were spread over. */
  orders: number;
  /** Each refund's amount. */
  amountMinor: number;
  /** Refund answers: 201 (succeeded), 422 refund_exceeds_captured. */
  succeeded: number;
  exceeded: number;
  /** exceeded / refund answers. */
  exceededShare: number;
  /** From the store: the refunds in state succeeded, their sum, and what those orders captured. */
  storedSucceeded: number;
  succeededSumMinor: number;
  capturedMinor: number;
  /** Orders whose succeeded refunds sum past their captured amount: the promise is 0. */
  overRefundedOrders: number;
  /** Orders whose refundedMinor is not the sum of their succeeded refunds. */
  mismatchedOrders: number;
}

export interface WebhookFigures {
  /** Events sent, and how many of them repeated an event id already sent. */
  sent: number;
  duplicatesSent: number;
  /** Distinct event ids sent, and the effects the store shows (inbox entries, settled orders). */
  distinctEvents: number;
  effects: number;
  /** Effects beyond one per distinct event: the promise is 0. */
  duplicateEffects: number;
}

export interface StoreCounts {
  commandsPerRequest: number;
  /** Committed transactions per request. */
  transactionsPerRequest: number;
  /** Aborted transactions per request (retries, failures). */
  abortsPerRequest: number;
  /** The same commands by name, per request (idle polling not subtracted); absent in older files. */
  byName?: Record<string, number>;
}

/** What a ratio divides: throughput, or the service's CPU cost per request. */
export type RatioBasis = 'req/s' | 'cpu';

export interface Ratio {
  id: string;
  label: string;
  basis: RatioBasis;
  numerator: string;
  denominator: string;
  /**
   * numerator's req/s (or CPU ms per request) divided by the denominator's; null when either is
   * missing or zero. For rows measured in the same interleaved rounds: the median of the per-round ratios.
   */
  value: number | null;
  /** The goal set for this ratio (bench/README.md), if any: value <= max, or value >= min. */
  target: { max?: number; min?: number } | null;
  /** Rows measured in the same rounds: every round's ratio, their median and range (bench/spread.ts). */
  spread?: RatioSpread;
  /**
   * Against the target: from the range with at least MIN_ROUNDS rounds (`unsettled` when it
   * straddles the target); from the one value otherwise (`met` / `missed`, marked one window when printed).
   */
  verdict?: Verdict | null;
}

export interface BenchResults {
  schemaVersion: typeof RESULTS_SCHEMA_VERSION;
  mode: 'quick' | 'full';
  startedAt: string;
  finishedAt: string;
  machine: {
    cpus: number;
    cpuModel: string;
    platform: string;
    arch: string;
    totalMemoryBytes: number;
    node: string;
  };
  /** Installed versions, null when a package is not found. */
  packages: Record<string, string | null>;
  backend: { kind: MongoBackendKind; description: string };
  settings: {
    durationSeconds: number;
    warmupSeconds: number;
    replayKeys: number;
    duplicateRate: number;
    paymentLatencyMs: number;
    /** Levels of the raw, create and layer-off scenarios; replay, GET and mixed run at the first. */
    concurrencyLevels: number[];
    hotKeyConcurrency: number;
  };
  scenarios: ScenarioResult[];
  ratios: Ratio[];
  /** Store commands of one request at a time, at the wire (issue 47 item 4); absent in older files. */
  wireCounts?: WireCount[];
}

/**
 * Store commands per request of one kind, sent one at a time (no race, no retry, no window cut-off):
 * a count that cannot be noise. The outbox relay's own commands are left out (its timer, not the request).
 */
export interface WireCount {
  id: string;
  label: string;
  requests: number;
  commandsPerRequest: number;
  byName: Record<string, number>;
  /** At most `max` (creates), or exactly `equals` (a replay, a GET). */
  target: { max?: number; equals?: number } | null;
}

/** The service's background work (the outbox relay, the event consumers; see BackgroundWork): not a request's. */
export function isBackgroundCommand(name: string): boolean {
  return name.endsWith('(background)');
}

/** Issue 47's counts: 19 or fewer per create (22 before it); one per replay from MongoDB, none from Redis; one per GET. */
export const WIRE_TARGETS = {
  create: { max: 19 },
  replayMongo: { equals: 1 },
  replayRedis: { equals: 0 },
  get: { equals: 1 },
} as const;

/** A wire count from the commands `byName` sent over `requests` requests, the relay's left out. */
export function wireCount(
  id: string,
  label: string,
  requests: number,
  sent: Readonly<Record<string, number>>,
  target: WireCount['target'],
): WireCount {
  const byName = Object.fromEntries(
    Object.entries(sent)
      .filter(([name, count]) => !isBackgroundCommand(name) && count > 0)
      .map(([name, count]) => [name, count / requests]),
  );
  const commandsPerRequest = Object.values(byName).reduce((total, count) => total + count, 0);
  return { id, label, requests, commandsPerRequest, byName, target };
}

/** Null without a target. */
export function wireCountMet(count: WireCount): boolean | null {
  if (!count.target) return null;
  const value = Math.round(count.commandsPerRequest * 100) / 100;
  if (count.target.equals !== undefined) return value === count.target.equals;
  return count.target.max === undefined || value <= count.target.max;
}

export function formatWireCounts(counts: readonly WireCount[] | undefined): string[] {
  if (!counts || counts.length === 0) return [];
  return [
    'Store commands per request, one request at a time (counted at the wire; the relay and the consumers left out):',
    ...counts.map((count) => {
      const met = wireCountMet(count);
      const goal = count.target?.equals !== undefined ? `= ${count.target.equals}` : `<= ${count.target?.max}`;
      const target = met === null ? '' : `   target ${goal}: ${met ? 'met' : 'MISSED'}`;
      return (
        `  ${`${count.label} (${count.requests} requests)`.padEnd(50)} ${count.commandsPerRequest.toFixed(2).padStart(6)}${target}` +
        `\n      ${formatByName(count.byName)}`
      );
    }),
    '',
  ];
}

type RatioDefinition = Omit<Ratio, 'value'>;

/** Scenario ids used by run.ts; the ratios refer to them. */
export const scenarioId = {
  floor: (concurrency: number) => `floor-c${concurrency}`,
  create: (concurrency: number) => `create-c${concurrency}`,
  createLayerOff: (concurrency: number) => `create-layer-off-c${concurrency}`,
  replay: (concurrency: number) => `replay-c${concurrency}`,
  get: (concurrency: number) => `get-c${concurrency}`,
  mixed: (concurrency: number) => `mixed-dup-c${concurrency}`,
  hotKey: (concurrency: number) => `hot-key-c${concurrency}`,
  readFloor: (concurrency: number) => `read-floor-c${concurrency}`,
  replayLimitsOff: (concurrency: number) => `replay-limits-off-c${concurrency}`,
  getLimitsOff: (concurrency: number) => `get-limits-off-c${concurrency}`,
  health: (concurrency: number) => `health-live-c${concurrency}`,
  healthLimitsOff: (concurrency: number) => `health-live-limits-off-c${concurrency}`,
  helloFloor: (concurrency: number) => `hello-floor-c${concurrency}`,
  refund: (concurrency: number) => `refund-c${concurrency}`,
  refundHotOrder: (refunds: number) => `refund-hot-order-n${refunds}`,
  webhook: (concurrency: number) => `webhook-c${concurrency}`,
};

/**
 * The targets of the performance issues: replay costs at most 1.5 GETs, the
 * layer at most 15% of a create; GET and replay each at most 1.3x the read
 * floor's CPU (issue 28); a create's CPU does not grow with concurrency
 * (highest level / lowest: 1.2 leaves room for this machine's noise).
 */
export const TARGETS = {
  createVsFloor: { min: 0.6 },
  layerCpu: { max: 1.15 },
  replayVsGetCpu: { max: 1.5 },
  readVsFloorCpu: { max: 1.3 },
  cpuGrowth: { max: 1.2 },
};

export function ratioDefinitions(concurrencies: readonly number[], replayConcurrency: number): RatioDefinition[] {
  const definitions: RatioDefinition[] = [];
  const ratio = (id: string, label: string, basis: RatioBasis, numerator: string, denominator: string, target: Ratio['target'] = null) =>
    definitions.push({ id, label, basis, numerator, denominator, target });
  for (const c of concurrencies) {
    ratio(`create-vs-floor-c${c}`, `create / floor (c${c})`, 'req/s', scenarioId.create(c), scenarioId.floor(c), TARGETS.createVsFloor);
  }
  for (const c of concurrencies)
    ratio(`layer-on-vs-off-c${c}`, `layer on / layer off (c${c})`, 'req/s', scenarioId.create(c), scenarioId.createLayerOff(c));
  const r = replayConcurrency;
  ratio(`replay-vs-create-c${r}`, `replay / create (c${r})`, 'req/s', scenarioId.replay(r), scenarioId.create(r));
  ratio(`replay-vs-get-c${r}`, `replay / GET (c${r})`, 'req/s', scenarioId.replay(r), scenarioId.get(r));
  for (const c of concurrencies) {
    ratio(
      `layer-on-vs-off-cpu-c${c}`,
      `layer on / layer off (c${c})`,
      'cpu',
      scenarioId.create(c),
      scenarioId.createLayerOff(c),
      TARGETS.layerCpu,
    );
  }
  ratio(`replay-vs-get-cpu-c${r}`, `replay / GET (c${r})`, 'cpu', scenarioId.replay(r), scenarioId.get(r), TARGETS.replayVsGetCpu);
  const floor = scenarioId.readFloor(r);
  ratio(`get-vs-read-floor-cpu-c${r}`, `GET / read floor (c${r})`, 'cpu', scenarioId.get(r), floor, TARGETS.readVsFloorCpu);
  ratio(`replay-vs-read-floor-cpu-c${r}`, `replay / read floor (c${r})`, 'cpu', scenarioId.replay(r), floor, TARGETS.readVsFloorCpu);
  // --redis: the Redis service's replay against the read floor rounds of the same step (issue 47 item 2).
  ratio(
    `replay-redis-vs-read-floor-cpu-c${r}`,
    `replay, Redis / read floor (c${r})`,
    'cpu',
    `${scenarioId.replay(r)}${REDIS_ID_SUFFIX}`,
    `${floor}${REDIS_ID_SUFFIX}`,
    TARGETS.readVsFloorCpu,
  );
  ratio(`get-limits-cpu-c${r}`, `GET limits on / off (c${r})`, 'cpu', scenarioId.get(r), scenarioId.getLimitsOff(r));
  ratio(`replay-limits-cpu-c${r}`, `replay limits on / off (c${r})`, 'cpu', scenarioId.replay(r), scenarioId.replayLimitsOff(r));
  ratio(`health-limits-cpu-c${r}`, `/health/live limits on / off (c${r})`, 'cpu', scenarioId.health(r), scenarioId.healthLimitsOff(r));
  ratio(`health-vs-hello-cpu-c${r}`, `/health/live / Fastify hello (c${r})`, 'cpu', scenarioId.health(r), scenarioId.helloFloor(r));
  for (const c of concurrencies) {
    ratio(`create-vs-floor-cpu-c${c}`, `create / floor (c${c})`, 'cpu', scenarioId.create(c), scenarioId.floor(c));
  }
  if (concurrencies.length > 1) {
    const [low, high] = [concurrencies[0], concurrencies[concurrencies.length - 1]];
    ratio(`create-cpu-growth`, `create c${high} / c${low}`, 'cpu', scenarioId.create(high), scenarioId.create(low), TARGETS.cpuGrowth);
    ratio(`layer-off-cpu-growth`, `layer off c${high} / c${low}`, 'cpu', scenarioId.createLayerOff(high), scenarioId.createLayerOff(low));
    ratio(`floor-cpu-growth`, `floor c${high} / c${low}`, 'cpu', scenarioId.floor(high), scenarioId.floor(low));
  }
  return definitions;
}

export function computeRatios(scenarios: readonly ScenarioResult[], definitions: readonly RatioDefinition[]): Ratio[] {
  const byId = new Map(scenarios.map((scenario) => [scenario.id, scenario]));
  const metric = (id: string, basis: RatioBasis) => {
    const scenario = byId.get(id);
    return basis === 'cpu' ? scenario?.cpuMsPerRequest : scenario?.reqPerSec;
  };
  return definitions.map((definition) => {
    const perRound = roundRatios(byId.get(definition.numerator)?.rounds, byId.get(definition.denominator)?.rounds, definition.basis);
    if (perRound && perRound.length > 1) {
      const spread = spreadOf(perRound);
      const verdict =
        perRound.length >= MIN_ROUNDS ? verdictOf(spread, definition.target) : oneValueVerdict(spread.median, definition.target);
      return { ...definition, value: spread.median, spread, verdict };
    }
    const top = metric(definition.numerator, definition.basis);
    const bottom = metric(definition.denominator, definition.basis);
    const value = top === undefined || top === null || bottom === undefined || bottom === null || bottom <= 0 ? null : top / bottom;
    return { ...definition, value, verdict: value === null ? null : oneValueVerdict(value, definition.target) };
  });
}

function oneValueVerdict(value: number, target: Ratio['target']): Verdict | null {
  return verdictOf({ min: value, max: value }, target);
}

/** Null when the ratio has no target or no value. */
export function targetMet(ratio: Ratio): boolean | null {
  if (!ratio.target || ratio.value === null) return null;
  return (
    (ratio.target.max === undefined || ratio.value <= ratio.target.max) &&
    (ratio.target.min === undefined || ratio.value >= ratio.target.min)
  );
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples; 0 for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export interface OrderKeyState {
  recordId: string;
  state: string;
}

/** Idempotency keys holding more than one live (not failed) order: the promise says there are none. */
export function findDuplicateOrders(orders: readonly OrderKeyState[]): { recordId: string; liveOrders: number }[] {
  const live = new Map<string, number>();
  for (const order of orders) {
    if (order.state === 'failed') continue;
    live.set(order.recordId, (live.get(order.recordId) ?? 0) + 1);
  }
  return [...live.entries()].filter(([, count]) => count > 1).map(([recordId, liveOrders]) => ({ recordId, liveOrders }));
}

export interface RefundOrderState {
  id: string;
  capturedMinor: number;
  refundedMinor: number;
}

export interface StoredRefund {
  orderId: string;
  state: string;
  amountMinor: number;
}

/**
 * What the store says about the refunds of `orders`, whatever the answers
 * said: per order, the succeeded refunds must sum to at most the captured
 * amount (never over-refunded) and to exactly the order's refundedMinor.
 */
export function refundStoreFigures(
  orders: readonly RefundOrderState[],
  refunds: readonly StoredRefund[],
): Pick<RefundFigures, 'storedSucceeded' | 'succeededSumMinor' | 'capturedMinor' | 'overRefundedOrders' | 'mismatchedOrders'> & {
  problems: string[];
} {
  const succeededBy = new Map<string, number>();
  let storedSucceeded = 0;
  for (const refund of refunds) {
    if (refund.state !== 'succeeded') continue;
    storedSucceeded++;
    succeededBy.set(refund.orderId, (succeededBy.get(refund.orderId) ?? 0) + refund.amountMinor);
  }
  const problems: string[] = [];
  let overRefundedOrders = 0;
  let mismatchedOrders = 0;
  for (const order of orders) {
    const sum = succeededBy.get(order.id) ?? 0;
    if (sum > order.capturedMinor) {
      overRefundedOrders++;
      problems.push(`${order.id}: succeeded refunds ${sum} > captured ${order.capturedMinor}`);
    }
    if (sum !== order.refundedMinor) {
      mismatchedOrders++;
      problems.push(`${order.id}: refundedMinor ${order.refundedMinor} != succeeded refunds ${sum}`);
    }
  }
  return {
    storedSucceeded,
    succeededSumMinor: orders.reduce((total, order) => total + (succeededBy.get(order.id) ?? 0), 0),
    capturedMinor: orders.reduce((total, order) => total + order.capturedMinor, 0),
    overRefundedOrders,
    mismatchedOrders,
    problems,
  };
}

/** What the refund answers were: 201s, 422 refund_exceeds_captured, anything else (named in the check). */
export interface RefundAnswers {
  succeeded: number;
  exceeded: number;
  /** Status (and code, for a problem) of every other answer: "409", "422 idempotency_key_reused", "error". */
  other: string[];
}

/** A refund row's figures, and what the store showed wrong (an empty list: nothing). */
export interface RefundObservation {
  figures: RefundFigures;
  problems: string[];
}

/** The figures of a refund row: the answers, their 422 share, and the store's sums. */
export function refundFigures(
  orders: readonly RefundOrderState[],
  refunds: readonly StoredRefund[],
  answers: RefundAnswers,
  amountMinor: number,
): RefundObservation {
  const { problems, ...stored } = refundStoreFigures(orders, refunds);
  const answered = answers.succeeded + answers.exceeded + answers.other.length;
  return {
    figures: {
      orders: orders.length,
      amountMinor,
      succeeded: answers.succeeded,
      exceeded: answers.exceeded,
      exceededShare: answered === 0 ? 0 : answers.exceeded / answered,
      ...stored,
    },
    problems,
  };
}

/** One refund answer: 201, 422 refund_exceeds_captured, or "<status> <code>" for anything else (0: no answer). */
export function classifyRefundAnswer(status: number, body: string): string {
  if (status === 201) return 'succeeded';
  let code: unknown;
  try {
    code = (JSON.parse(body) as { code?: unknown }).code;
  } catch {
    code = undefined;
  }
  if (status === 422 && code === 'refund_exceeds_captured') return 'exceeded';
  if (status === 0) return 'no answer';
  return typeof code === 'string' ? `${status} ${code}` : String(status);
}

/** Adds one answer to a tally. */
export function tallyRefundAnswer(answers: RefundAnswers, status: number, body: string): void {
  const kind = classifyRefundAnswer(status, body);
  if (kind === 'succeeded') answers.succeeded++;
  else if (kind === 'exceeded') answers.exceeded++;
  else answers.other.push(kind);
}

function otherSummary(other: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const status of other) counts.set(status, (counts.get(status) ?? 0) + 1);
  return [...counts.entries()].map(([status, count]) => `${count} x ${status}`).join(', ');
}

/**
 * The throughput row: every refund succeeded (the orders have room for all),
 * each one a refund in the store (the store may hold more: answers cut off at
 * the window's end), and no order over-refunded or out of step.
 */
export function refundThroughputCheck({ figures, problems: found }: RefundObservation, answers: RefundAnswers): CheckResult {
  const problems = [...found];
  if (answers.succeeded === 0) problems.push('no refund succeeded');
  if (answers.exceeded > 0) problems.push(`${answers.exceeded} x 422 refund_exceeds_captured (the orders had room)`);
  if (answers.other.length > 0) problems.push(otherSummary(answers.other));
  if (figures.storedSucceeded < answers.succeeded)
    problems.push(`${answers.succeeded} refunds answered 201, only ${figures.storedSucceeded} succeeded in the store`);
  const sums = `succeeded refunds sum ${figures.succeededSumMinor} <= captured ${figures.capturedMinor} over ${figures.orders} orders`;
  return problems.length === 0
    ? { ok: true, detail: `all ${answers.succeeded} refunds 201; ${sums}` }
    : { ok: false, detail: `${problems.join('; ')}; ${sums}` };
}

/**
 * The hot order: N refunds of `amountMinor` at once on one order whose
 * captured amount they oversubscribe. Only 201 or 422 refund_exceeds_captured;
 * the store's succeeded refunds sum to at most the captured amount (never
 * over-refunded), and a 422 only once the order was full (the sum is within
 * one refund of the captured amount); as many refunds succeeded in the store
 * as were answered 201.
 */
export function hotOrderCheck({ figures, problems: found }: RefundObservation, answers: RefundAnswers): CheckResult {
  const problems = [...found];
  if (answers.other.length > 0) problems.push(otherSummary(answers.other));
  if (figures.storedSucceeded !== answers.succeeded)
    problems.push(`${answers.succeeded} answered 201, ${figures.storedSucceeded} succeeded in the store`);
  if (answers.exceeded > 0 && figures.succeededSumMinor <= figures.capturedMinor - figures.amountMinor)
    problems.push(`422 while the order still had room (${figures.succeededSumMinor} of ${figures.capturedMinor} refunded)`);
  const sums =
    `succeeded sum ${figures.succeededSumMinor} ${figures.succeededSumMinor <= figures.capturedMinor ? '<=' : '>'} captured ` +
    `${figures.capturedMinor}; ${answers.succeeded} x 201, ${answers.exceeded} x 422 (${(figures.exceededShare * 100).toFixed(0)}%)`;
  return problems.length === 0 ? { ok: true, detail: sums } : { ok: false, detail: `${problems.join('; ')}; ${sums}` };
}

/** The refund rows' figures under the table (sums read from the store). */
export function formatRefundFigures(scenarios: readonly ScenarioResult[]): string[] {
  const rows = scenarios.filter((scenario) => scenario.refunds);
  if (rows.length === 0) return [];
  return [
    'Refunds (sums read from the store after the run):',
    ...rows.map((scenario) => {
      const f = scenario.refunds!;
      return (
        `  ${`${scenario.title} (c${scenario.concurrency})`.padEnd(50)} ${f.succeeded} x 201, ${f.exceeded} x 422 ` +
        `(${(f.exceededShare * 100).toFixed(1)}%), refunds of ${f.amountMinor} over ${f.orders} order(s); p99 ${scenario.p99Ms.toFixed(1)} ms; ` +
        `succeeded sum ${f.succeededSumMinor} ${f.succeededSumMinor <= f.capturedMinor ? '<=' : '>'} captured ${f.capturedMinor}; ` +
        `${f.overRefundedOrders} over-refunded, ${f.mismatchedOrders} out of step`
      );
    }),
    '',
  ];
}

/**
 * The delivery order of a webhook run: every id once, and after every
 * `every - 1` first deliveries one repeat of an id sent shortly before (the
 * last one, then the one before it, ... cycling over the last three), so
 * that some repeats arrive while their first delivery is still in flight:
 * 1/`every` of all deliveries are duplicates.
 */
export function duplicateSchedule(ids: readonly string[], every: number): string[] {
  const schedule: string[] = [];
  let sent = 0;
  let repeats = 0;
  while (sent < ids.length) {
    if ((schedule.length + 1) % every === 0 && sent > 0) {
      schedule.push(ids[sent - 1 - (repeats++ % Math.min(sent, 3))]);
    } else {
      schedule.push(ids[sent++]);
    }
  }
  return schedule;
}

/** Duplicate effects of a webhook run: effects beyond one per distinct event id sent. */
export function webhookFigures(sentIds: readonly string[], effects: number): WebhookFigures {
  const distinct = new Set(sentIds).size;
  return {
    sent: sentIds.length,
    duplicatesSent: sentIds.length - distinct,
    distinctEvents: distinct,
    effects,
    duplicateEffects: Math.max(0, effects - distinct),
  };
}

/** The webhook rows' figures under the table. */
export function formatWebhookFigures(scenarios: readonly ScenarioResult[]): string[] {
  const rows = scenarios.filter((scenario) => scenario.webhooks);
  if (rows.length === 0) return [];
  return [
    'Webhooks (effects counted in the store after the run):',
    ...rows.map((scenario) => {
      const f = scenario.webhooks!;
      return (
        `  ${`${scenario.title} (c${scenario.concurrency})`.padEnd(50)} ${f.sent} events sent, ${f.duplicatesSent} duplicates; ` +
        `${f.effects} effects for ${f.distinctEvents} distinct events: ${f.duplicateEffects} duplicate effects`
      );
    }),
    '',
  ];
}

/** bench/results/<ISO date>.json, with ':' replaced so the name is valid on every file system. */
export function resultsFileName(date: Date): string {
  return `${date.toISOString().replace(/:/g, '-')}.json`;
}

export function failedChecks(results: Pick<BenchResults, 'scenarios'>): ScenarioResult[] {
  return results.scenarios.filter((scenario) => scenario.check !== null && !scenario.check.ok);
}

/**
 * The correctness checks (all 201, no duplicate orders, one order per hot
 * key) decide the exit code on every backend: the emulator runs behind the
 * serializing proxy, where it keeps every committed write.
 */
export function runPassed(results: Pick<BenchResults, 'scenarios'>): boolean {
  return failedChecks(results).length === 0;
}

export function formatChecksSummary(results: Pick<BenchResults, 'scenarios'>): string {
  const failed = failedChecks(results);
  const total = results.scenarios.filter((scenario) => scenario.check !== null).length;
  if (failed.length === 0) return `Checks: all ${total} passed.`;
  return `Checks: FAILED ${failed.length} of ${total}: ${failed.map((scenario) => scenario.id).join(', ')}.`;
}

/**
 * How long to measure so that a slow backend still completes enough requests
 * to judge: the base window, stretched to what the warm-up's throughput needs
 * for `minRequests` (with nothing completed in the warm-up, the cap).
 */
export function measuringWindowSeconds(window: {
  baseSeconds: number;
  warmupSeconds: number;
  warmupRequests: number;
  minRequests: number;
  capSeconds: number;
}): number {
  const { baseSeconds, warmupSeconds, warmupRequests, minRequests, capSeconds } = window;
  if (warmupSeconds <= 0) return baseSeconds;
  if (warmupRequests === 0) return Math.max(baseSeconds, capSeconds);
  const needed = Math.ceil((minRequests * warmupSeconds) / warmupRequests);
  return Math.max(baseSeconds, Math.min(capSeconds, needed));
}

const COLUMNS = [
  { title: 'scenario', width: 44, align: 'left' },
  { title: 'conc', width: 4, align: 'right' },
  { title: 'req/s', width: 8, align: 'right' },
  { title: 'p50 ms', width: 8, align: 'right' },
  { title: 'p99 ms', width: 8, align: 'right' },
  { title: 'cpu ms/req', width: 10, align: 'right' },
  { title: 'errors', width: 6, align: 'right' },
  { title: 'non-2xx', width: 7, align: 'right' },
  { title: 'check', width: 0, align: 'left' },
] as const;

function cell(value: string, column: (typeof COLUMNS)[number]): string {
  if (column.width === 0) return value;
  return column.align === 'left' ? value.padEnd(column.width) : value.padStart(column.width);
}

function row(values: string[]): string {
  return values
    .map((value, index) => cell(value, COLUMNS[index]))
    .join('  ')
    .trimEnd();
}

export function formatScenarioRow(scenario: ScenarioResult): string {
  const check = scenario.check ? `${scenario.check.ok ? 'ok' : 'FAIL'}: ${scenario.check.detail}` : '-';
  return row([
    scenario.title.length > 44 ? `${scenario.title.slice(0, 43)}~` : scenario.title,
    String(scenario.concurrency),
    scenario.reqPerSec.toFixed(1),
    scenario.p50Ms.toFixed(1),
    scenario.p99Ms.toFixed(1),
    scenario.cpuMsPerRequest === null ? '-' : scenario.cpuMsPerRequest.toFixed(2),
    String(scenario.errors),
    String(scenario.non2xx),
    check,
  ]);
}

const VERDICT_TEXT: Record<Verdict, string> = { met: 'met', missed: 'MISSED', unsettled: 'UNSETTLED' };

/**
 * `replay / GET (c4)  1.41 (1.30-1.62, 5 rounds) (replay-c4 / get-c4)   target <= 1.5: UNSETTLED`;
 * a ratio of one window each is judged on its one value and says so (`met, 1 window`).
 */
export function formatRatioLine(ratio: Ratio): string {
  const value = ratio.value === null ? 'n/a' : ratio.spread ? formatSpread(ratio.spread) : ratio.value.toFixed(2);
  const verdict = ratio.verdict === undefined ? verdictFromValue(ratio) : ratio.verdict;
  const goal = ratio.target?.max !== undefined ? `<= ${ratio.target.max}` : `>= ${ratio.target?.min}`;
  const judged = ratio.spread && ratio.spread.rounds.length >= MIN_ROUNDS;
  const verdictText =
    verdict === null
      ? 'n/a'
      : `${VERDICT_TEXT[verdict]}${judged ? '' : `, ${ratio.spread ? `${ratio.spread.rounds.length} rounds` : '1 window'}`}`;
  const target = ratio.target ? `   target ${goal}: ${verdictText}` : '';
  return `  ${ratio.label.padEnd(34)} ${value.padStart(6)}   (${ratio.numerator} / ${ratio.denominator})${target}`;
}

/** Files written before verdicts were: met or missed from the one value. */
function verdictFromValue(ratio: Ratio): Verdict | null {
  const met = targetMet(ratio);
  return met === null ? null : met ? 'met' : 'missed';
}

/** `find orders 1.0, insert orders 1.0, ...`, largest first: which commands a request sent (0.05 and under left out). */
export function formatByName(byName: Readonly<Record<string, number>>): string {
  return Object.entries(byName)
    .filter(([, count]) => count > 0.05)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([name, count]) => `${name} ${count.toFixed(1)}`)
    .join(', ');
}

/** Store commands and transactions per request, for the rows that counted them. */
export function formatStoreCounts(scenarios: readonly ScenarioResult[]): string[] {
  const counted = scenarios.filter((scenario) => scenario.store);
  if (counted.length === 0) return [];
  return [
    'Store commands per request (counted at the wire; hello, ping and idle polling left out):',
    ...counted.map((scenario) => {
      const store = scenario.store!;
      return (
        `  ${`${scenario.title} (c${scenario.concurrency})`.padEnd(50)} ${store.commandsPerRequest.toFixed(1).padStart(5)} commands, ` +
        `${store.transactionsPerRequest.toFixed(2)} transactions, ${store.abortsPerRequest.toFixed(2)} aborted` +
        (store.byName ? `\n      ${formatByName(store.byName)}` : '')
      );
    }),
    '',
  ];
}

/** A scenario run again against the service with the Redis fast path (`--redis`) carries this suffix. */
export const REDIS_ID_SUFFIX = '-redis';

function change(before: number | null, after: number | null, digits: number): string {
  if (before === null || after === null) return '-';
  const delta = before === 0 ? '' : ` (${after >= before ? '+' : ''}${(((after - before) / before) * 100).toFixed(0)}%)`;
  return `${before.toFixed(digits)} -> ${after.toFixed(digits)}${delta}`;
}

/**
 * `--redis`: each scenario MongoDB only -> with the Redis fast path, side by
 * side (req/s, p99, service CPU per request). Empty without Redis runs.
 */
export function formatRedisComparison(scenarios: readonly ScenarioResult[]): string[] {
  const pairs = scenarios.flatMap((withRedis) => {
    if (!withRedis.id.endsWith(REDIS_ID_SUFFIX)) return [];
    const alone = scenarios.find((candidate) => candidate.id === withRedis.id.slice(0, -REDIS_ID_SUFFIX.length));
    return alone ? [[alone, withRedis] as const] : [];
  });
  if (pairs.length === 0) return [];
  return [
    'Redis fast path: MongoDB only -> with Redis (service CPU only; redis-server not counted):',
    ...pairs.map(
      ([alone, withRedis]) =>
        `  ${alone.title.padEnd(36)} c${String(alone.concurrency).padEnd(3)} req/s ${change(alone.reqPerSec, withRedis.reqPerSec, 0)}; ` +
        `p99 ms ${change(alone.p99Ms, withRedis.p99Ms, 1)}; cpu ms/req ${change(alone.cpuMsPerRequest, withRedis.cpuMsPerRequest, 2)}`,
    ),
    '',
  ];
}

/** The text printed at the end of a run (and re-printable from a results file). */
export function formatReport(results: BenchResults): string {
  const header = row(COLUMNS.map((column) => column.title));
  const lines = [
    `Benchmark (${results.mode}) ${results.startedAt}: ${results.settings.durationSeconds} s per scenario, ` +
      `${results.settings.warmupSeconds} s warm-up, concurrency ${results.settings.concurrencyLevels.join('/')} ` +
      `(hot key ${results.settings.hotKeyConcurrency}), payment simulator latency ${results.settings.paymentLatencyMs} ms`,
    `Machine: ${results.machine.cpus} CPUs (${results.machine.cpuModel}), node ${results.machine.node}; ` +
      `MongoDB backend: ${results.backend.kind} - ${results.backend.description}`,
    `Packages: ${Object.entries(results.packages)
      .map(([name, version]) => `${name} ${version ?? '?'}`)
      .join(', ')}`,
    '',
    header,
    '-'.repeat(header.length),
    ...results.scenarios.map(formatScenarioRow),
    '',
    'Ratios (req/s):',
    ...results.ratios.filter((ratio) => ratio.basis === 'req/s').map(formatRatioLine),
    '',
    'Ratios (service CPU per request; lower is cheaper):',
    ...results.ratios.filter((ratio) => ratio.basis === 'cpu').map(formatRatioLine),
    '',
    ...formatWireCounts(results.wireCounts),
    ...formatStoreCounts(results.scenarios),
    ...formatRefundFigures(results.scenarios),
    ...formatWebhookFigures(results.scenarios),
    ...formatRedisComparison(results.scenarios),
    ...peerComparison(results),
    formatChecksSummary(results),
  ];
  if (results.backend.kind === 'emulator') lines.push('', `CAVEAT: ${EMULATOR_CAVEAT}`);
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------- peers (issue 39 item 4; bench/peers-report.ts)

/** The peers' replay and GET beside ours (plain, limits off, Redis fast path): empty when the run has no peer rows. */
function peerComparison(results: BenchResults): string[] {
  const c = results.settings.concurrencyLevels[0];
  const ours = [
    { label: 'ours (@idempotent-orders)', replay: scenarioId.replay(c), get: scenarioId.get(c) },
    { label: 'ours, rate limits off', replay: scenarioId.replayLimitsOff(c), get: scenarioId.getLimitsOff(c) },
    { label: 'ours, Redis fast path', replay: `${scenarioId.replay(c)}${REDIS_ID_SUFFIX}`, get: `${scenarioId.get(c)}${REDIS_ID_SUFFIX}` },
  ];
  return formatPeerComparison(results.scenarios, ours, c, scenarioId.readFloor(c));
}

export function serializeResults(results: BenchResults): string {
  return `${JSON.stringify(results, null, 2)}\n`;
}

export class ResultsFormatError extends Error {
  constructor(message: string) {
    super(`Not a benchmark results file: ${message}`);
    this.name = 'ResultsFormatError';
  }
}

type Json = Record<string, unknown>;

function object(value: unknown, path: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ResultsFormatError(`${path} must be an object`);
  return value as Json;
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new ResultsFormatError(`${path} must be a string`);
  return value;
}

function number(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new ResultsFormatError(`${path} must be a finite number >= 0`);
  }
  return value;
}

function isoDate(value: unknown, path: string): string {
  const text = string(value, path);
  if (Number.isNaN(Date.parse(text))) throw new ResultsFormatError(`${path} must be an ISO date`);
  return text;
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new ResultsFormatError(`${path} must be an array`);
  return value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], path: string): T {
  if (!allowed.includes(value as T)) throw new ResultsFormatError(`${path} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function parseCheck(value: unknown, path: string): CheckResult | null {
  if (value === null) return null;
  const check = object(value, path);
  if (typeof check.ok !== 'boolean') throw new ResultsFormatError(`${path}.ok must be a boolean`);
  return { ok: check.ok, detail: string(check.detail, `${path}.detail`) };
}

function parseScenario(value: unknown, path: string): ScenarioResult {
  const s = object(value, path);
  const counts = object(s.statusCounts, `${path}.statusCounts`);
  const statusCounts: Record<string, number> = {};
  for (const [status, count] of Object.entries(counts)) {
    if (!/^\d{3}$/.test(status)) throw new ResultsFormatError(`${path}.statusCounts key "${status}" is not an HTTP status`);
    statusCounts[status] = number(count, `${path}.statusCounts.${status}`);
  }
  return {
    id: string(s.id, `${path}.id`),
    title: string(s.title, `${path}.title`),
    concurrency: number(s.concurrency, `${path}.concurrency`),
    durationSeconds: number(s.durationSeconds, `${path}.durationSeconds`),
    requests: number(s.requests, `${path}.requests`),
    reqPerSec: number(s.reqPerSec, `${path}.reqPerSec`),
    p50Ms: number(s.p50Ms, `${path}.p50Ms`),
    p99Ms: number(s.p99Ms, `${path}.p99Ms`),
    errors: number(s.errors, `${path}.errors`),
    non2xx: number(s.non2xx, `${path}.non2xx`),
    statusCounts,
    cpuMsPerRequest: s.cpuMsPerRequest === null ? null : number(s.cpuMsPerRequest, `${path}.cpuMsPerRequest`),
    ...(s.store === undefined ? {} : { store: parseStore(s.store, `${path}.store`) }),
    ...(s.refunds === undefined ? {} : { refunds: parseRefunds(s.refunds, `${path}.refunds`) }),
    ...(s.webhooks === undefined ? {} : { webhooks: parseWebhooks(s.webhooks, `${path}.webhooks`) }),
    ...(s.rounds === undefined ? {} : { rounds: array(s.rounds, `${path}.rounds`).map((r, i) => parseRound(r, `${path}.rounds[${i}]`)) }),
    check: parseCheck(s.check, `${path}.check`),
  };
}

function parseStore(value: unknown, path: string): StoreCounts | null {
  if (value === null) return null;
  const store = object(value, path);
  return {
    commandsPerRequest: number(store.commandsPerRequest, `${path}.commandsPerRequest`),
    transactionsPerRequest: number(store.transactionsPerRequest, `${path}.transactionsPerRequest`),
    abortsPerRequest: number(store.abortsPerRequest, `${path}.abortsPerRequest`),
    ...(store.byName === undefined ? {} : { byName: parseCounts(store.byName, `${path}.byName`) }),
  };
}

function parseCounts(value: unknown, path: string): Record<string, number> {
  const counts = object(value, path);
  return Object.fromEntries(Object.entries(counts).map(([name, count]) => [name, number(count, `${path}.${name}`)]));
}

function parseRefunds(value: unknown, path: string): RefundFigures | null {
  if (value === null) return null;
  const r = object(value, path);
  const field = (name: keyof RefundFigures) => number(r[name], `${path}.${name}`);
  return {
    orders: field('orders'),
    amountMinor: field('amountMinor'),
    succeeded: field('succeeded'),
    exceeded: field('exceeded'),
    exceededShare: field('exceededShare'),
    storedSucceeded: field('storedSucceeded'),
    succeededSumMinor: field('succeededSumMinor'),
    capturedMinor: field('capturedMinor'),
    overRefundedOrders: field('overRefundedOrders'),
    mismatchedOrders: field('mismatchedOrders'),
  };
}

function parseWebhooks(value: unknown, path: string): WebhookFigures | null {
  if (value === null) return null;
  const w = object(value, path);
  const field = (name: keyof WebhookFigures) => number(w[name], `${path}.${name}`);
  return {
    sent: field('sent'),
    duplicatesSent: field('duplicatesSent'),
    distinctEvents: field('distinctEvents'),
    effects: field('effects'),
    duplicateEffects: field('duplicateEffects'),
  };
}

function parseRound(value: unknown, path: string): RoundFigures {
  const r = object(value, path);
  return {
    requests: number(r.requests, `${path}.requests`),
    durationSeconds: number(r.durationSeconds, `${path}.durationSeconds`),
    reqPerSec: number(r.reqPerSec, `${path}.reqPerSec`),
    cpuMsPerRequest: r.cpuMsPerRequest === null ? null : number(r.cpuMsPerRequest, `${path}.cpuMsPerRequest`),
  };
}

function parseSpread(value: unknown, path: string): RatioSpread {
  const s = object(value, path);
  return {
    median: number(s.median, `${path}.median`),
    min: number(s.min, `${path}.min`),
    max: number(s.max, `${path}.max`),
    rounds: array(s.rounds, `${path}.rounds`).map((r, i) => number(r, `${path}.rounds[${i}]`)),
  };
}

function parseTarget(value: unknown, path: string): Ratio['target'] {
  if (value === null) return null;
  const target = object(value, path);
  return {
    ...(target.max === undefined ? {} : { max: number(target.max, `${path}.max`) }),
    ...(target.min === undefined ? {} : { min: number(target.min, `${path}.min`) }),
  };
}

function parseRatio(value: unknown, path: string): Ratio {
  const r = object(value, path);
  return {
    id: string(r.id, `${path}.id`),
    label: string(r.label, `${path}.label`),
    basis: oneOf(r.basis, ['req/s', 'cpu'] as const, `${path}.basis`),
    target: parseTarget(r.target, `${path}.target`),
    numerator: string(r.numerator, `${path}.numerator`),
    denominator: string(r.denominator, `${path}.denominator`),
    value: r.value === null ? null : number(r.value, `${path}.value`),
    ...(r.spread === undefined ? {} : { spread: parseSpread(r.spread, `${path}.spread`) }),
    ...(r.verdict === undefined
      ? {}
      : { verdict: r.verdict === null ? null : oneOf(r.verdict, ['met', 'missed', 'unsettled'] as const, `${path}.verdict`) }),
  };
}

/** Reads a results file back, validating every field; throws ResultsFormatError naming the first bad one. */
export function parseResults(json: string): BenchResults {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new ResultsFormatError(`invalid JSON (${(error as Error).message})`);
  }
  const root = object(raw, '$');
  if (root.schemaVersion !== RESULTS_SCHEMA_VERSION) {
    throw new ResultsFormatError(`$.schemaVersion must be ${RESULTS_SCHEMA_VERSION} (got ${JSON.stringify(root.schemaVersion)})`);
  }
  const machine = object(root.machine, '$.machine');
  const backend = object(root.backend, '$.backend');
  const settings = object(root.settings, '$.settings');
  const packages = object(root.packages, '$.packages');
  const scenarios = array(root.scenarios, '$.scenarios').map((s, i) => parseScenario(s, `$.scenarios[${i}]`));
  const ids = new Set<string>();
  for (const scenario of scenarios) {
    if (ids.has(scenario.id)) throw new ResultsFormatError(`scenario id "${scenario.id}" appears twice`);
    ids.add(scenario.id);
  }
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    mode: oneOf(root.mode, ['quick', 'full'] as const, '$.mode'),
    startedAt: isoDate(root.startedAt, '$.startedAt'),
    finishedAt: isoDate(root.finishedAt, '$.finishedAt'),
    machine: {
      cpus: number(machine.cpus, '$.machine.cpus'),
      cpuModel: string(machine.cpuModel, '$.machine.cpuModel'),
      platform: string(machine.platform, '$.machine.platform'),
      arch: string(machine.arch, '$.machine.arch'),
      totalMemoryBytes: number(machine.totalMemoryBytes, '$.machine.totalMemoryBytes'),
      node: string(machine.node, '$.machine.node'),
    },
    packages: Object.fromEntries(
      Object.entries(packages).map(([name, version]) => [name, version === null ? null : string(version, `$.packages.${name}`)]),
    ),
    backend: {
      kind: oneOf(backend.kind, ['uri', 'mongod', 'container', 'emulator'] as const, '$.backend.kind'),
      description: string(backend.description, '$.backend.description'),
    },
    settings: {
      durationSeconds: number(settings.durationSeconds, '$.settings.durationSeconds'),
      warmupSeconds: number(settings.warmupSeconds, '$.settings.warmupSeconds'),
      replayKeys: number(settings.replayKeys, '$.settings.replayKeys'),
      duplicateRate: number(settings.duplicateRate, '$.settings.duplicateRate'),
      paymentLatencyMs: number(settings.paymentLatencyMs, '$.settings.paymentLatencyMs'),
      concurrencyLevels: array(settings.concurrencyLevels, '$.settings.concurrencyLevels').map((level, i) =>
        number(level, `$.settings.concurrencyLevels[${i}]`),
      ),
      hotKeyConcurrency: number(settings.hotKeyConcurrency, '$.settings.hotKeyConcurrency'),
    },
    scenarios,
    ratios: array(root.ratios, '$.ratios').map((r, i) => parseRatio(r, `$.ratios[${i}]`)),
    ...(root.wireCounts === undefined
      ? {}
      : { wireCounts: array(root.wireCounts, '$.wireCounts').map((w, i) => parseWireCount(w, `$.wireCounts[${i}]`)) }),
  };
}

function parseWireCount(value: unknown, path: string): WireCount {
  const w = object(value, path);
  const target = w.target === null ? null : object(w.target, `${path}.target`);
  return {
    id: string(w.id, `${path}.id`),
    label: string(w.label, `${path}.label`),
    requests: number(w.requests, `${path}.requests`),
    commandsPerRequest: number(w.commandsPerRequest, `${path}.commandsPerRequest`),
    byName: parseCounts(w.byName, `${path}.byName`),
    target: target && {
      ...(target.max === undefined ? {} : { max: number(target.max, `${path}.target.max`) }),
      ...(target.equals === undefined ? {} : { equals: number(target.equals, `${path}.target.equals`) }),
    },
  };
}

/** Every answer `status`, no connection error (our rows' check and the peers'). */
export function allStatusCheck(measured: Pick<ScenarioResult, 'requests' | 'errors' | 'statusCounts'>, status: string): CheckResult {
  if (measured.requests === 0) return { ok: false, detail: `no response within the run; ${measured.errors} errors` };
  const ok = measured.errors === 0 && onlyStatuses(measured, [status]);
  return { ok, detail: ok ? `all ${status}` : `${statusSummary(measured.statusCounts)}; ${measured.errors} errors` };
}

/** Whether every answer of a row had one of these statuses. */
export function onlyStatuses(measured: Pick<ScenarioResult, 'statusCounts'>, allowed: string[]): boolean {
  return Object.keys(measured.statusCounts).every((status) => allowed.includes(status));
}

/** `201: 40, 409: 2`: a row's answers by status. */
export function statusSummary(counts: Record<string, number>): string {
  return Object.entries(counts)
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');
}
