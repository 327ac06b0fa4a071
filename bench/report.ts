/**
 * The pure half of the benchmark: the results shape, the ratios, the table
 * text, percentiles, the duplicate-order count, and reading a results file
 * back. No I/O here, so bench/report.spec.ts can test all of it quickly.
 */
import type { MongoBackendKind } from '../src/database/embedded-mongo.js';

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
  check: CheckResult | null;
}

export interface StoreCounts {
  commandsPerRequest: number;
  /** Committed transactions per request. */
  transactionsPerRequest: number;
  /** Aborted transactions per request (retries, failures). */
  abortsPerRequest: number;
}

/** What a ratio divides: throughput, or the service's CPU cost per request. */
export type RatioBasis = 'req/s' | 'cpu';

export interface Ratio {
  id: string;
  label: string;
  basis: RatioBasis;
  numerator: string;
  denominator: string;
  /** numerator's req/s (or CPU ms per request) divided by the denominator's; null when either is missing or zero. */
  value: number | null;
  /** The goal set for this ratio (bench/README.md), if any: value <= max, or value >= min. */
  target: { max?: number; min?: number } | null;
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
    const top = metric(definition.numerator, definition.basis);
    const bottom = metric(definition.denominator, definition.basis);
    const value = top === undefined || top === null || bottom === undefined || bottom === null || bottom <= 0 ? null : top / bottom;
    return { ...definition, value };
  });
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

export function formatRatioLine(ratio: Ratio): string {
  const value = ratio.value === null ? 'n/a' : ratio.value.toFixed(2);
  const met = targetMet(ratio);
  const goal = ratio.target?.max !== undefined ? `<= ${ratio.target.max}` : `>= ${ratio.target?.min}`;
  const target = met === null ? (ratio.target ? `   target ${goal}: n/a` : '') : `   target ${goal}: ${met ? 'met' : 'MISSED'}`;
  return `  ${ratio.label.padEnd(34)} ${value.padStart(6)}   (${ratio.numerator} / ${ratio.denominator})${target}`;
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
        `${store.transactionsPerRequest.toFixed(2)} transactions, ${store.abortsPerRequest.toFixed(2)} aborted`
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
    ...formatStoreCounts(results.scenarios),
    ...formatRedisComparison(results.scenarios),
    formatChecksSummary(results),
  ];
  if (results.backend.kind === 'emulator') lines.push('', `CAVEAT: ${EMULATOR_CAVEAT}`);
  return `${lines.join('\n')}\n`;
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
  };
}
