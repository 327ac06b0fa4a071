/**
 * `npm run bench [-- --quick]`: starts the store and two built service
 * processes (idempotency layer on / off), runs each scenario with a warm-up,
 * prints the table and the ratios, and writes bench/results/<ISO date>.json.
 * See bench/README.md for what each scenario means.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { resolveMongoBackend, type MongoBackend } from '../src/database/embedded-mongo.js';
import { chargeEvent } from '../src/payment-simulator/webhook-events.js';
import { WebhookSigner } from '../src/payment-simulator/webhook-signer.js';
import { header, runLoad, type LoadMeasurement, type RequestSpec } from './load.js';
import {
  computeRatios,
  parseResults,
  findDuplicateOrders,
  formatReport,
  measuringWindowSeconds,
  formatScenarioRow,
  duplicateSchedule,
  hotOrderCheck,
  percentile,
  refundFigures,
  refundThroughputCheck,
  tallyRefundAnswer,
  webhookFigures,
  ratioDefinitions,
  allStatusCheck,
  onlyStatuses,
  statusSummary,
  resultsFileName,
  runPassed,
  REDIS_ID_SUFFIX,
  scenarioId,
  serializeResults,
  RESULTS_SCHEMA_VERSION,
  type BenchResults,
  type CheckResult,
  type RefundAnswers,
  type ScenarioResult,
  type StoreCounts,
  type WireCount,
  wireCount,
  WIRE_TARGETS,
} from './report.js';
import { renderChart, renderHistoryChart } from './chart.js';
import { CommandCounter, perRequest } from './command-counter.js';
import { cpuMeter } from './cpu.js';
import { floorCreateLoop, startFloor } from './floor.js';
import { mergeRounds } from './rounds.js';
import { formatFrames, topFrames, topFramesIn, topOwnersIn, type CpuProfile, type ProfileWindow } from './profile.js';
import { findRedisServer, startRedisServer } from './redis-server.js';
import { peerPackageVersions, peerRows, type PeerRun } from './peers.js';
import { peerRatioDefinitions, twinRatioDefinitions } from './peers-report.js';
import { BENCH_RATE_LIMITS, resampleIdleCpu, sleep, startService, type ServiceProcess } from './service.js';
import { BenchStore } from './store.js';
// --- events group (issue 45) ---
import { eventsOnly, runEventsBench } from './events.js';
// --- end events group ---

/** dist/bench/run.js -> the repository root. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TENANT = 'bench';
const SECRET = 'bench-secret-0123456789';
/** Create, layer-off and raw-driver levels; replay, GET and mixed run at the first one. */
const DEFAULT_LEVELS = [16, 64];
/**
 * The emulator serves one create at a time (~150 ms each here): 64 creates in
 * flight take ~10 s to drain, longer than a quick scenario, so --quick on the
 * emulator defaults to lower levels (--concurrency overrides).
 */
const EMULATOR_QUICK_LEVELS = [4, 16];
/** 409s and replays are cheap, so the hot key keeps its 64 clients everywhere. */
const HOT_KEY_CONCURRENCY = 64;
const DUPLICATE_RATE = 0.05;
/** Rounds of the rows a ratio compares (issue 47: each ratio the median of at least 5 interleaved rounds). */
const DEFAULT_READ_ROUNDS = 5;
/** Fewer completed requests than this judge nothing (e.g. the 5% duplicates need some 40 requests to send two). */
const MIN_MEASURED_REQUESTS = 40;

const ORDER_BODY = JSON.stringify({
  customerId: 'cus_bench',
  currency: 'USD',
  items: [{ sku: 'sku_bench', quantity: 2, unitPriceMinor: 1250 }],
  paymentMethod: { token: 'tok_visa' },
});

const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` };

/** The refund throughput row's partial refunds: small, so that the orders (25.00 each) never run out. */
const REFUND_AMOUNT_MINOR = 5;
/** The hot order's refunds are each this share of its captured amount: N of them oversubscribe it once N > 20. */
const HOT_ORDER_SHARE = 20;
const DEFAULT_HOT_ORDER_REFUNDS = 50;
/** The webhook row: orders paid asynchronously (202, processing) until the provider's signed event settles them. */
const ASYNC_ORDER_BODY = JSON.stringify({ ...(JSON.parse(ORDER_BODY) as object), paymentMethod: { token: 'tok_async' } });
/** The services verify webhooks with this secret (WEBHOOK_SECRETS); the benchmark signs with it. */
const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 'bench-webhook-secret').toString('base64')}`;
/** Every 5th delivery repeats an event just sent. */
const WEBHOOK_DUPLICATE_SHARE = 0.2;
const refundBody = (amountMinor: number) => JSON.stringify({ amountMinor, reason: 'requested_by_customer' });

interface Settings {
  mode: 'quick' | 'full';
  durationSeconds: number;
  warmupSeconds: number;
  replayKeys: number;
  paymentLatencyMs: number;
  /** From --concurrency; undefined = the default for the backend. */
  levels?: number[];
  /** --only: the scenario families to run (all when undefined). */
  only?: ScenarioFamily[];
  /** --profile: V8 CPU profiles of both services, summarized at the end. */
  profile: boolean;
  /** --growth-sizes: record counts of the growth scenario (default by mode; on the emulator only when given). */
  growthSizes?: number[];
  /** --redis: replay, 5% duplicates and hot key again against a service with the Redis fast path, side by side. */
  redis: boolean;
  /** --compare: an earlier results file, drawn as the "before" bars of the chart. */
  compare?: string;
  /** --refund-orders: saved orders the refund throughput row spreads its refunds over. */
  refundOrders: number;
  /** --refund-burst: concurrent refunds on the hot order. */
  refundBurst: number;
  /** --webhook-orders: asynchronous orders whose events the webhook row delivers. */
  webhookOrders: number;
  /** --read-rounds: interleaved rounds of the replay, GET and read floor rows (bench/rounds.ts). */
  readRounds: number;
  /** False with --no-peers: no @node-idempotency rows even when the family is selected (bench/peers.ts). */
  peers: boolean;
}

const FAMILIES = [
  'floor',
  'create',
  'layer-off',
  'replay',
  'mixed',
  'hot-key',
  'growth',
  'refund',
  'webhook',
  'strangers',
  'peers',
] as const;
type ScenarioFamily = (typeof FAMILIES)[number];
const REDIS_FAMILIES: ScenarioFamily[] = ['replay', 'mixed', 'hot-key'];

interface Bench {
  settings: Settings;
  /** Concurrency levels of this run (raw, create, layer off); the first also drives replay, GET and mixed. */
  levels: number[];
  store: BenchStore;
  /** Idempotency layer on (the real service). */
  service: ServiceProcess;
  /** BENCH_DISABLE_IDEMPOTENCY=true: the same create work without the record. */
  layerOff: ServiceProcess;
  /** The service as it ships but with no rate limits: the limits-off rows. */
  limitsOff: ServiceProcess;
  /** bench/floor-process.ts: the read floor (bare Fastify + findOne by _id) and the create floor, CPU measured. */
  floor: ServiceProcess;
  /** --redis: the same service with REDIS_URL set (a redis-server of the run's own). */
  redisService?: ServiceProcess;
  /** Prefix that keeps this run's keys apart from any other run's. */
  runId: string;
  backendKind: MongoBackend['kind'];
  /** What the peer processes are started with (bench/peers.ts): our services' options, the run's cleanups, and --profile's. */
  peerStart: Pick<PeerRun, 'service' | 'cleanups' | 'profiled' | 'reportProfiles'>;
}

function readSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      'replay-keys': { type: 'string' },
      'payment-latency-ms': { type: 'string' },
      concurrency: { type: 'string' },
      only: { type: 'string' },
      profile: { type: 'boolean', default: false },
      'growth-sizes': { type: 'string' },
      redis: { type: 'boolean', default: false },
      compare: { type: 'string' },
      'refund-orders': { type: 'string' },
      'refund-burst': { type: 'string' },
      'webhook-orders': { type: 'string' },
      'read-rounds': { type: 'string' },
      'no-peers': { type: 'boolean', default: false },
    },
  });
  const quick = values.quick ?? false;
  const int = (value: string | undefined, fallback: number, name: string) => {
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`--${name} must be a whole number >= 0`);
    return parsed;
  };
  return {
    mode: quick ? 'quick' : 'full',
    durationSeconds: Math.max(1, int(values.duration, quick ? 2 : 10, 'duration')),
    warmupSeconds: int(values.warmup, quick ? 1 : 3, 'warmup'),
    replayKeys: Math.max(1, int(values['replay-keys'], quick ? 20 : 200, 'replay-keys')),
    paymentLatencyMs: int(values['payment-latency-ms'], 0, 'payment-latency-ms'),
    levels: values.concurrency === undefined ? undefined : parseLevels(values.concurrency),
    only: values.only === undefined ? undefined : parseFamilies(values.only),
    profile: values.profile ?? false,
    growthSizes: values['growth-sizes'] === undefined ? undefined : parseLevels(values['growth-sizes'], 1_000_000),
    redis: values.redis ?? false,
    compare: values.compare,
    refundOrders: Math.max(1, int(values['refund-orders'], quick ? 10 : 50, 'refund-orders')),
    refundBurst: Math.max(2, int(values['refund-burst'], DEFAULT_HOT_ORDER_REFUNDS, 'refund-burst')),
    webhookOrders: Math.max(1, int(values['webhook-orders'], quick ? 40 : 200, 'webhook-orders')),
    readRounds: Math.max(1, int(values['read-rounds'], DEFAULT_READ_ROUNDS, 'read-rounds')),
    peers: !values['no-peers'],
  };
}

function parseFamilies(value: string): ScenarioFamily[] {
  const families = value.split(',').map((part) => part.trim());
  const unknown = families.filter((family) => !FAMILIES.includes(family as ScenarioFamily));
  if (unknown.length > 0) throw new Error(`--only takes a comma-separated list of ${FAMILIES.join(', ')} (unknown: ${unknown.join(', ')})`);
  return families as ScenarioFamily[];
}

function parseLevels(value: string, max = 1024): number[] {
  const levels = value.split(',').map((part) => Number(part.trim()));
  if (levels.length === 0 || levels.some((level) => !Number.isInteger(level) || level < 1 || level > max)) {
    throw new Error(`expected a comma-separated list of whole numbers 1-${max}, e.g. 16,64 (got "${value}")`);
  }
  return levels;
}

function levelsFor(settings: Settings, backend: MongoBackend): number[] {
  if (settings.levels) return settings.levels;
  return backend.kind === 'emulator' && settings.mode === 'quick' ? EMULATOR_QUICK_LEVELS : DEFAULT_LEVELS;
}

// ---------------------------------------------------------------- requests

function createRequest(keyFor: () => string): RequestSpec {
  return {
    method: 'POST',
    path: '/v1/orders',
    headers: HEADERS,
    body: ORDER_BODY,
    setupRequest: (request) => {
      request.headers['idempotency-key'] = keyFor();
      return request;
    },
  };
}

function uniqueKeys(prefix: string): () => string {
  let sequence = 0;
  return () => `${prefix}-${++sequence}`;
}

// ---------------------------------------------------------------- helpers

function scenario(id: string, title: string, concurrency: number, measured: Measured, check: CheckResult | null): ScenarioResult {
  return { id, title, concurrency, ...measured, check };
}

/** A load run with the service's CPU (and, behind a counter, its store commands) per completed request over the same window. */
type Measured = LoadMeasurement & { cpuMsPerRequest: number | null; store?: StoreCounts | null };

/** Each labelled measured window, per process: `--profile` ranks each path's frames from its own windows. */
const profileWindows: { pid: number | undefined; label: string; window: ProfileWindow }[] = [];
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
async function windowed<T>(target: ServiceProcess, label: string | undefined, run: () => Promise<T>): Promise<T> {
  const fromUs = monotonicUs();
  const result = await run();
  if (label) profileWindows.push({ pid: target.pid, label, window: { fromUs, toUs: monotonicUs() } });
  return result;
}

async function measure(target: ServiceProcess, load: () => Promise<LoadMeasurement>, label?: string): Promise<Measured> {
  const cpu = cpuMeter(target.pid, target.idleCpuMsPerSecond);
  const commands = storeMeter(target);
  const measured = await windowed(target, label, load);
  return { ...measured, cpuMsPerRequest: cpu.perRequest(measured.requests), ...commands(measured.requests) };
}

/** Store commands per request since now, less the process's idle rate (outbox relay polls) over the same time. */
function storeMeter(target: ServiceProcess): (requests: number) => { store?: StoreCounts | null } {
  const counter = target.counter;
  if (!counter) return () => ({});
  const before = counter.snapshot();
  const started = Date.now();
  return (requests) => {
    const counts = perRequest(before, counter.snapshot(), requests);
    if (!counts) return { store: null };
    const idle = (target.idleCommandsPerSecond * (Date.now() - started)) / 1000 / requests;
    return {
      store: {
        commandsPerRequest: Math.max(0, counts.commands - idle),
        transactionsPerRequest: counts.transactions,
        abortsPerRequest: counts.aborts,
        byName: counts.byName,
      },
    };
  };
}

/**
 * Empty store, warm-up run (discarded), wait for the warm-up's requests still
 * inside the service, empty store again, measured run, wait again. The
 * measured window stretches (up to a cap) when the warm-up shows a slow
 * backend would otherwise complete too few requests to judge.
 *
 * `per: 'saved order'` (the create rows): CPU and store commands are counted
 * from the start of the run until the service has finished the requests
 * still in it, and divided by the orders it saved. Counting per response
 * over the load window alone charged the run with the CPU of the requests
 * cut off at its end, and of the warm-up's requests still running at its
 * start - up to 1.5 x concurrency creates' worth, so at c16 on the slow
 * emulator (~50 creates in a window) CPU per create looked ~40% higher than
 * at c4: growth with concurrency that was the benchmark's own.
 */
async function warmThenMeasure(
  bench: Bench,
  target: ServiceProcess,
  connections: number,
  requestsFor: (phase: 'warm' | 'run') => RequestSpec[],
  per: 'response' | 'saved order' = 'response',
  label?: string,
): Promise<Measured> {
  const { store, settings } = bench;
  await store.clean();
  let warmupRequests = 0;
  if (settings.warmupSeconds > 0) {
    progress(`  ${label ?? target.name}: ${settings.warmupSeconds} s warm-up`);
    const warm = await runLoad({
      baseUrl: target.baseUrl,
      connections,
      durationSeconds: settings.warmupSeconds,
      requests: requestsFor('warm'),
    });
    warmupRequests = warm.requests;
    await drain(bench);
    await store.clean();
  }
  const durationSeconds = windowAfterWarmup(settings, warmupRequests);
  progress(`  ${label ?? target.name}: measuring ${durationSeconds} s${per === 'saved order' ? ', then the service drains' : ''}`);
  const cpu = cpuMeter(target.pid, target.idleCpuMsPerSecond);
  const commands = storeMeter(target);
  const measured = await windowed(target, label, async () => {
    const loaded = await runLoad({ baseUrl: target.baseUrl, connections, durationSeconds, requests: requestsFor('run') });
    await (per === 'saved order' ? drain(bench) : settle(bench));
    return loaded;
  });
  const completed = per === 'saved order' ? await store.savedOrders() : measured.requests;
  return { ...measured, cpuMsPerRequest: cpu.perRequest(completed), ...commands(completed) };
}

/**
 * Until no order is mid-flight in the service: generous, because the CPU and
 * command counts depend on it (half a second without progress happens on a
 * loaded machine; five seconds means an abandoned order).
 */
async function drain(bench: Bench): Promise<void> {
  if (!(await bench.store.quiesce(30_000, 5_000)))
    process.stderr.write('  (note: orders still moving 30 s after the load stopped; going on)\n');
}

function windowAfterWarmup(settings: Settings, warmupRequests: number): number {
  return measuringWindowSeconds({
    baseSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
    warmupRequests,
    minRequests: MIN_MEASURED_REQUESTS,
    capSeconds: settings.mode === 'quick' ? 15 : 60,
  });
}

/** On a real MongoDB this returns within milliseconds; the cap only matters on the slow emulator. */
async function settle(bench: Bench): Promise<void> {
  const capSeconds = bench.settings.mode === 'quick' ? 2 : 10;
  if (!(await bench.store.quiesce(capSeconds * 1000))) {
    process.stderr.write(`  (note: orders still moving ${capSeconds} s after the load stopped; going on)\n`);
  }
}

// ---------------------------------------------------------------- scenarios

/** 1. The floor: the same create (look-up, T0, charge, T1, T2) with the bare driver, no HTTP, no Nest. */
async function floor(bench: Bench, concurrency: number): Promise<ScenarioResult> {
  const { store, settings } = bench;
  await store.clean();
  let warmupRequests = 0;
  if (settings.warmupSeconds > 0) {
    warmupRequests = (await floorCreateLoop(bench.floor, concurrency, settings.warmupSeconds, `${bench.runId}-floor-warm`)).committed;
  }
  await store.clean();
  const durationSeconds = windowAfterWarmup(settings, warmupRequests);
  // In the floor's own process, so that its CPU per create is measured as the service's is.
  const cpu = cpuMeter(bench.floor.pid, bench.floor.idleCpuMsPerSecond);
  const commands = storeMeter(bench.floor);
  const loop = await floorCreateLoop(bench.floor, concurrency, durationSeconds, `${bench.runId}-floor-c${concurrency}`);
  const cpuMsPerRequest = cpu.perRequest(loop.committed);
  const counted = commands(loop.committed);
  await store.clean();
  return {
    id: scenarioId.floor(concurrency),
    title: 'floor: the same create, bare driver',
    concurrency,
    durationSeconds: loop.durationSeconds,
    requests: loop.committed,
    reqPerSec: loop.committed / loop.durationSeconds,
    p50Ms: percentile(loop.latencies, 50),
    p99Ms: percentile(loop.latencies, 99),
    errors: loop.failed,
    non2xx: 0,
    statusCounts: {},
    cpuMsPerRequest,
    ...counted,
    check: { ok: loop.failed === 0, detail: `${loop.committed} creates, ${loop.failed} failed` },
  };
}

/** 2 and 3. POST /v1/orders with a fresh key per request, on the real service or with the layer off. */
async function createUniqueKeys(bench: Bench, concurrency: number, layer: 'on' | 'off'): Promise<ScenarioResult> {
  const target = layer === 'on' ? bench.service : bench.layerOff;
  const measured = await warmThenMeasure(
    bench,
    target,
    concurrency,
    (phase) => [createRequest(uniqueKeys(`${bench.runId}-create-${layer}-c${concurrency}-${phase}`))],
    'saved order',
    `create c${concurrency}, layer ${layer}`,
  );
  return layer === 'on'
    ? scenario(scenarioId.create(concurrency), 'create, unique keys', concurrency, measured, allStatusCheck(measured, '201'))
    : scenario(
        scenarioId.createLayerOff(concurrency),
        'create, unique keys, idempotency layer OFF',
        concurrency,
        measured,
        allStatusCheck(measured, '201'),
      );
}

/**
 * 4. Replay of completed keys (all 201 + Idempotent-Replayed) and GET
 * /v1/orders/:id of the same orders, with the rate limits on (as deployed)
 * and off; the read floor (bare Fastify + one findOne by _id, own process) on
 * the same orders; /health/live on and off against Fastify's hello world.
 */
async function replayAndGet(bench: Bench): Promise<ScenarioResult[]> {
  const { store, settings, service } = bench;
  const concurrency = bench.levels[0];
  await store.clean();
  const seeded = await seedOrders(service, `${bench.runId}-replay`, settings.replayKeys, Math.min(4, concurrency));
  await settle(bench);
  const keys = seeded.map((order) => order.key);
  const orderIds = seeded.map((order) => order.id);
  await countAtTheWire(bench, keys, orderIds);

  const roundRobin = (path: (id: string) => string, headers: Record<string, string> = {}): RequestSpec[] => {
    let next = 0;
    return [
      {
        method: 'GET',
        headers,
        setupRequest: (request) => {
          request.path = path(orderIds[next++ % orderIds.length]);
          return request;
        },
      },
    ];
  };
  const getRequests = () => roundRobin((id) => `/v1/orders/${id}`, { authorization: HEADERS.authorization });
  const fixed = (path: string): RequestSpec[] => [{ method: 'GET', path }];

  const run = async (target: ServiceProcess, requests: () => RequestSpec[], label?: string, round?: { index: number; of: number }) => {
    const load = (durationSeconds: number, labelled?: string) =>
      measure(
        target,
        () => runLoad({ baseUrl: target.baseUrl, connections: concurrency, durationSeconds, requests: requests() }),
        labelled,
      );
    const warmup = round && round.index > 0 ? 0 : settings.warmupSeconds;
    const which = round && round.of > 1 ? ` (round ${round.index + 1} of ${round.of})` : '';
    progress(`  ${label ?? target.name}${which}: ${warmup} s warm-up, ${settings.durationSeconds} s measured`);
    if (warmup > 0) await load(warmup);
    return load(settings.durationSeconds, label);
  };
  const replayRun = async (target: ServiceProcess, name: string, round: { index: number; of: number }) => {
    let replay = replayOf(keys);
    const measured = await run(target, () => (replay = replayOf(keys)).requests, `${name} c${concurrency}`, round);
    return { measured, tally: replay.tally };
  };

  // The rows the read targets compare take turns, round after round (bench/rounds.ts), so that what else the
  // machine does falls on each of them alike; each row's figures are its rounds' together.
  const ordersBefore = await store.db.collection('orders').countDocuments({});
  const rounds: { replayed: Awaited<ReturnType<typeof replayRun>>[]; replayedNoLimits: Awaited<ReturnType<typeof replayRun>>[] } & Record<
    'got' | 'gotNoLimits' | 'floorRead',
    Measured[]
  > = { replayed: [], replayedNoLimits: [], got: [], gotNoLimits: [], floorRead: [] };
  for (let index = 0; index < settings.readRounds; index++) {
    const round = { index, of: settings.readRounds };
    rounds.replayed.push(await replayRun(service, 'replay', round));
    rounds.replayedNoLimits.push(await replayRun(bench.limitsOff, 'replay, limits off', round));
    rounds.got.push(await run(service, getRequests, `GET /v1/orders/:id c${concurrency}`, round));
    rounds.gotNoLimits.push(await run(bench.limitsOff, getRequests, `GET /v1/orders/:id, limits off, c${concurrency}`, round));
    rounds.floorRead.push(await run(bench.floor, () => roundRobin((id) => `/orders/${id}`), `read floor c${concurrency}`, round));
  }
  const tallied = (runs: Awaited<ReturnType<typeof replayRun>>[]) => ({
    measured: mergeRounds(runs.map((r) => r.measured)),
    tally: runs.reduce((total, r) => ({ replayed: total.replayed + r.tally.replayed, other: total.other + r.tally.other }), {
      replayed: 0,
      other: 0,
    }),
  });
  const replayed = tallied(rounds.replayed);
  const replayedNoLimits = tallied(rounds.replayedNoLimits);
  const got = mergeRounds(rounds.got);
  const gotNoLimits = mergeRounds(rounds.gotNoLimits);
  const floorRead = mergeRounds(rounds.floorRead);
  await settle(bench);
  const ordersAfter = await store.db.collection('orders').countDocuments({});
  const live = await run(service, () => fixed('/health/live'), `/health/live c${concurrency}`);
  const liveNoLimits = await run(bench.limitsOff, () => fixed('/health/live'), `/health/live, limits off, c${concurrency}`);
  const hello = await run(bench.floor, () => fixed('/hello'), `hello floor c${concurrency}`);
  await store.clean();

  const replayCheck = (result: typeof replayed): CheckResult => {
    const ok = result.tally.other === 0 && result.measured.requests > 0 && result.measured.errors === 0 && ordersAfter === ordersBefore;
    return {
      ok,
      detail:
        (ok ? 'all 201 + Idempotent-Replayed' : `${result.tally.other} not replayed (${statusSummary(result.measured.statusCounts)})`) +
        ` over ${keys.length} keys; orders ${ordersBefore} -> ${ordersAfter}`,
    };
  };
  const c = concurrency;
  return [
    scenario(scenarioId.replay(c), 'replay of completed keys', c, replayed.measured, replayCheck(replayed)),
    scenario(scenarioId.replayLimitsOff(c), 'replay, rate limits OFF', c, replayedNoLimits.measured, replayCheck(replayedNoLimits)),
    scenario(scenarioId.get(c), 'GET /v1/orders/:id (same orders)', c, got, allStatusCheck(got, '200')),
    scenario(scenarioId.getLimitsOff(c), 'GET /v1/orders/:id, rate limits OFF', c, gotNoLimits, allStatusCheck(gotNoLimits, '200')),
    scenario(scenarioId.readFloor(c), 'read floor: Fastify + findOne by _id', c, floorRead, allStatusCheck(floorRead, '200')),
    scenario(scenarioId.health(c), 'GET /health/live', c, live, allStatusCheck(live, '200')),
    scenario(scenarioId.healthLimitsOff(c), 'GET /health/live, rate limits OFF', c, liveNoLimits, allStatusCheck(liveNoLimits, '200')),
    scenario(scenarioId.helloFloor(c), 'hello floor: bare Fastify route', c, hello, allStatusCheck(hello, '200')),
  ];
}

/** The wire counts of this run (issue 47 item 4): written to the results file beside the ratios. */
const wireCounts: WireCount[] = [];
/** Requests of each kind sent one at a time for the wire counts. */
const WIRE_COUNT_REQUESTS = 10;

/**
 * Store commands of a create, a replay and a GET, one request at a time, on the layer-on service (or
 * the Redis one in its step): no race, retry or window cut-off, so the count is exact - 22 per create
 * before issue 47, 19 after. The outbox relay's commands are left out by name (report.ts).
 */
async function countAtTheWire(bench: Bench, keys: string[], orderIds: string[]): Promise<void> {
  const target = bench.service;
  const counter = target.counter;
  if (!counter) return;
  const redis = target === bench.redisService;
  const where = redis ? ', Redis fast path' : '';
  const send = async (count: number, request: (index: number) => Promise<Response>) => {
    const before = counter.snapshot();
    for (let index = 0; index < count; index++) {
      const response = await request(index);
      await response.arrayBuffer();
      if (response.status >= 300) throw new Error(`wire count: a request answered ${response.status}`);
    }
    return perRequest(before, counter.snapshot(), 1)!.byName;
  };
  const post = (key: string) =>
    fetch(`${target.baseUrl}/v1/orders`, { method: 'POST', headers: { ...HEADERS, 'idempotency-key': key }, body: ORDER_BODY });
  const n = Math.min(WIRE_COUNT_REQUESTS, keys.length);
  progress(`  counting store commands at the wire${where}: ${n} creates, replays and GETs, one at a time`);
  const created = await send(n, (index) => post(`${bench.runId}-wire-${redis ? 'r' : 'm'}-${index}`));
  const replayed = await send(n, (index) => post(keys[index]));
  const read = await send(n, (index) =>
    fetch(`${target.baseUrl}/v1/orders/${orderIds[index]}`, { headers: { authorization: HEADERS.authorization } }),
  );
  wireCounts.push(
    wireCount(`wire-create${redis ? REDIS_ID_SUFFIX : ''}`, `create${where}`, n, created, redis ? null : WIRE_TARGETS.create),
    wireCount(
      `wire-replay${redis ? REDIS_ID_SUFFIX : ''}`,
      `replay${redis ? where : ', MongoDB only'}`,
      n,
      replayed,
      redis ? WIRE_TARGETS.replayRedis : WIRE_TARGETS.replayMongo,
    ),
    wireCount(`wire-get${redis ? REDIS_ID_SUFFIX : ''}`, `GET${where}`, n, read, WIRE_TARGETS.get),
  );
}

/** The peer's replay and GET rows (bench/peers.ts), measured and seeded with the helpers of ours. */
function peers(bench: Bench): Promise<ScenarioResult[]> {
  const { settings } = bench;
  return peerRows({
    root: ROOT,
    ...bench.peerStart,
    store: bench.store,
    concurrency: bench.levels[0],
    warmupSeconds: settings.warmupSeconds,
    durationSeconds: settings.durationSeconds,
    replayKeys: settings.replayKeys,
    runId: bench.runId,
    readHeaders: { authorization: HEADERS.authorization },
    measure,
    seed: seedOrders,
    replayOf,
    firstOf,
    rounds: settings.readRounds,
    progress,
  });
}

/** POSTs with a fresh key each (the twin's and the peer's first-request rows), counting 201s that were not replays. */
function firstOf(prefix: string): { tally: { created: number; other: number }; requests: RequestSpec[] } {
  const tally = { created: 0, other: 0 };
  const request: RequestSpec = {
    ...createRequest(uniqueKeys(prefix)),
    onResponse: (status, _body, _context, headers) => {
      if (status === 201 && header(headers, 'idempotent-replayed') !== 'true') tally.created++;
      else tally.other++;
    },
  };
  return { tally, requests: [request] };
}

/** POSTs of completed keys, round-robin, counting what did not come back as a replay. */
function replayOf(keys: string[]): { tally: { replayed: number; other: number }; requests: RequestSpec[] } {
  const tally = { replayed: 0, other: 0 };
  let next = 0;
  const request: RequestSpec = {
    ...createRequest(() => keys[next++ % keys.length]),
    onResponse: (status, _body, _context, headers) => {
      if (status === 201 && header(headers, 'idempotent-replayed') === 'true') tally.replayed++;
      else tally.other++;
    },
  };
  return { tally, requests: [request] };
}

/**
 * Creates `count` orders, `concurrency` requests at a time, and returns their keys and
 * ids. A key whose create does not answer 201 is dropped for a fresh one (on
 * the emulator some do: it loses writes under concurrency), up to 3x `count`.
 */
async function seedOrders(
  service: ServiceProcess,
  prefix: string,
  count: number,
  concurrency: number,
  /** Another order body (the webhook row's asynchronous payment) and the status it answers. */
  order: { body: string; status: number } = { body: ORDER_BODY, status: 201 },
): Promise<{ key: string; id: string }[]> {
  const seeded: { key: string; id: string }[] = [];
  const failures: string[] = [];
  let attempts = 0;
  const worker = async () => {
    while (seeded.length < count && attempts < 3 * count) {
      const key = `${prefix}-${attempts++}`;
      const response = await fetch(`${service.baseUrl}/v1/orders`, {
        method: 'POST',
        headers: { ...HEADERS, 'idempotency-key': key },
        body: order.body,
      });
      const body = (await response.json()) as { id?: string };
      if (response.status === order.status && body.id) seeded.push({ key, id: body.id });
      else failures.push(String(response.status));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (failures.length > 0)
    process.stderr.write(`  (seeding: ${failures.length} creates did not answer ${order.status}: ${[...new Set(failures)].join(', ')})\n`);
  if (seeded.length === 0) throw new Error(`seeding ${prefix}: no create answered ${order.status}`);
  return seeded.slice(0, count);
}

/** 5. Unique keys with 5% of requests reusing a recent key (some still in flight); then count duplicate orders. */
async function mixedDuplicates(bench: Bench): Promise<ScenarioResult> {
  const concurrency = bench.levels[0];
  const every = Math.round(1 / DUPLICATE_RATE);
  let duplicatesSent = 0;
  const measured = await warmThenMeasure(bench, bench.service, concurrency, (phase) => {
    const fresh = uniqueKeys(`${bench.runId}-mixed-${phase}`);
    const recent: string[] = [];
    let sequence = 0;
    return [
      createRequest(() => {
        sequence++;
        if (sequence % every === 0 && recent.length > 0) {
          if (phase === 'run') duplicatesSent++;
          return recent[(sequence / every) % recent.length];
        }
        const key = fresh();
        recent.push(key);
        if (recent.length > 2 * concurrency) recent.shift();
        return key;
      }),
    ];
  });
  const duplicates = findDuplicateOrders(await bench.store.orderKeyStates());
  // With no repeated key sent (a run too short or too slow), "no duplicates" proves nothing.
  const ok = duplicates.length === 0 && duplicatesSent > 0 && measured.errors === 0 && onlyStatuses(measured, ['201', '409']);
  const check: CheckResult = {
    ok,
    detail: `duplicate orders: ${duplicates.length}; ${duplicatesSent} repeated keys sent; ${statusSummary(measured.statusCounts)}`,
  };
  await bench.store.clean();
  return scenario(scenarioId.mixed(concurrency), `mixed, ${DUPLICATE_RATE * 100}% duplicate keys`, concurrency, measured, check);
}

/** 6. Every client on one key: only 201 (first or replay) or 409 (in flight), and one order in the database. */
async function hotKey(bench: Bench): Promise<ScenarioResult> {
  const concurrency = HOT_KEY_CONCURRENCY;
  const keyOf = (phase: string) => `${bench.runId}-hot-${phase}`;
  const measured = await warmThenMeasure(bench, bench.service, concurrency, (phase) => [createRequest(() => keyOf(phase))]);
  const orders = await bench.store.orderKeyStates({ 'idempotency.recordId': { $regex: `:${keyOf('run')}$` } });
  const live = orders.filter((order) => order.state !== 'failed').length;
  const ok = live === 1 && measured.errors === 0 && onlyStatuses(measured, ['201', '409']);
  const check: CheckResult = { ok, detail: `${live} live order(s) for the key; ${statusSummary(measured.statusCounts)}` };
  await bench.store.clean();
  return scenario(scenarioId.hotKey(concurrency), 'hot key: all clients on one key', concurrency, measured, check);
}

/**
 * 7. Growth: replay and create cost as idempotency_records grows (filler
 * records of other keys, finished), so a reader sees the indexes at work:
 * flat figures mean every look-up and write stays an index operation.
 */
async function growth(bench: Bench): Promise<ScenarioResult[]> {
  const { store, settings, service } = bench;
  if (bench.backendKind === 'emulator' && !settings.growthSizes) {
    console.log(`  growth: skipped on the emulator - ${GROWTH_SKIP_REASON}`);
    return [];
  }
  const concurrency = bench.levels[0];
  const sizes = settings.growthSizes ?? (settings.mode === 'quick' ? [1_000, 10_000] : [1_000, 10_000, 100_000]);
  await store.clean();
  const keys = (await seedOrders(service, `${bench.runId}-growth`, settings.replayKeys, Math.min(4, concurrency))).map(
    (order) => order.key,
  );
  const results: ScenarioResult[] = [];
  for (const size of sizes) {
    await store.growRecords(size, `${bench.runId}-filler`);
    const run = (requests: RequestSpec[]) =>
      measure(service, () =>
        runLoad({ baseUrl: service.baseUrl, connections: concurrency, durationSeconds: settings.durationSeconds, requests }),
      );
    const replay = replayOf(keys);
    const replayed = await run(replay.requests);
    const created = await run([createRequest(uniqueKeys(`${bench.runId}-growth-${size}`))]);
    results.push(
      scenario(`growth-replay-${size}`, `replay, ${size} records`, concurrency, replayed, {
        ok: replay.tally.other === 0 && replayed.requests > 0,
        detail: `${replay.tally.replayed} replayed, ${replay.tally.other} not`,
      }),
      scenario(`growth-create-${size}`, `create, ${size} records`, concurrency, created, allStatusCheck(created, '201')),
    );
  }
  await store.clean();
  return results;
}

const GROWTH_SKIP_REASON =
  'its inserts slow down sharply past a few thousand documents in one collection (12k: 2.4 s each), so seeding ' +
  '100k records would take hours and measure the emulator, not the indexes; run it with MONGODB_URI ' +
  '(or --growth-sizes 200,1000 to see it work here)';

/**
 * 8a. Refund throughput: M saved orders, then keyed partial refunds (a fresh
 * key each) spread round-robin over them under autocannon. The orders have
 * room for every refund, so every answer must be 201; afterwards the store's
 * succeeded refunds must sum, per order, to its refundedMinor and to no more
 * than it captured.
 */
async function refundThroughput(bench: Bench): Promise<ScenarioResult> {
  const { store, settings, service } = bench;
  const concurrency = bench.levels[0];
  await store.clean();
  const orders = await seedOrders(service, `${bench.runId}-refund-orders`, settings.refundOrders, Math.min(4, concurrency));
  await settle(bench);
  const ids = orders.map((order) => order.id);
  // Warm-up and run both: the store check covers every refund sent.
  const answers: RefundAnswers = { succeeded: 0, exceeded: 0, other: [] };
  const requests = (phase: string): RequestSpec[] => {
    const keyFor = uniqueKeys(`${bench.runId}-refund-${phase}`);
    let next = 0;
    return [
      {
        method: 'POST',
        headers: HEADERS,
        body: refundBody(REFUND_AMOUNT_MINOR),
        setupRequest: (request) => {
          request.path = `/v1/orders/${ids[next++ % ids.length]}/refunds`;
          request.headers['idempotency-key'] = keyFor();
          return request;
        },
        onResponse: (status, body) => tallyRefundAnswer(answers, status, body),
      },
    ];
  };
  let warmupRequests = 0;
  if (settings.warmupSeconds > 0) {
    warmupRequests = (
      await runLoad({
        baseUrl: service.baseUrl,
        connections: concurrency,
        durationSeconds: settings.warmupSeconds,
        requests: requests('warm'),
      })
    ).requests;
    await drainRefunds(bench);
  }
  const durationSeconds = windowAfterWarmup(settings, warmupRequests);
  const measured = await measure(service, () =>
    runLoad({ baseUrl: service.baseUrl, connections: concurrency, durationSeconds, requests: requests('run') }),
  );
  await drainRefunds(bench);
  const observed = await observeRefunds(bench, ids, answers, REFUND_AMOUNT_MINOR);
  await store.clean();
  return {
    ...scenario(scenarioId.refund(concurrency), `refund: keyed partial refunds over ${ids.length} orders`, concurrency, measured, null),
    refunds: observed.figures,
    check: refundThroughputCheck(observed, answers),
  };
}

/**
 * 8b. The hot order: one saved order, N partial refunds of 1/20 of its
 * captured amount at once, each under its own key, so that they
 * oversubscribe it (N = 50: 2.5x). p50/p99 of the N answers, the share of
 * 422 refund_exceeds_captured, and the store's succeeded refunds, which must
 * sum to at most the captured amount.
 */
async function refundHotOrder(bench: Bench): Promise<ScenarioResult> {
  const { store, settings, service } = bench;
  const n = settings.refundBurst;
  await store.clean();
  const [order] = await seedOrders(service, `${bench.runId}-hot-order`, 1, 1);
  await settle(bench);
  const [before] = await store.refundOrderStates([order.id]);
  const amount = Math.max(1, Math.floor(before.capturedMinor / HOT_ORDER_SHARE));
  const body = refundBody(amount);
  const cpu = cpuMeter(service.pid, service.idleCpuMsPerSecond);
  const started = performance.now();
  const answered = await Promise.all(
    Array.from({ length: n }, async (_, index) => {
      const begin = performance.now();
      try {
        const response = await fetch(`${service.baseUrl}/v1/orders/${order.id}/refunds`, {
          method: 'POST',
          headers: { ...HEADERS, 'idempotency-key': `${bench.runId}-hot-order-refund-${index}` },
          body,
        });
        return { status: response.status, body: await response.text(), ms: performance.now() - begin };
      } catch (error) {
        return { status: 0, body: (error as Error).message, ms: performance.now() - begin };
      }
    }),
  );
  const durationSeconds = (performance.now() - started) / 1000;
  const cpuMsPerRequest = cpu.perRequest(n);
  await drainRefunds(bench);
  const answers: RefundAnswers = { succeeded: 0, exceeded: 0, other: [] };
  for (const answer of answered) tallyRefundAnswer(answers, answer.status, answer.body);
  const observed = await observeRefunds(bench, [order.id], answers, amount);
  const statusCounts: Record<string, number> = {};
  for (const answer of answered) if (answer.status !== 0) statusCounts[answer.status] = (statusCounts[answer.status] ?? 0) + 1;
  const latencies = answered.map((answer) => answer.ms);
  await store.clean();
  return {
    id: scenarioId.refundHotOrder(n),
    title: `hot order: ${n} refunds at once, 1/${HOT_ORDER_SHARE} each`,
    concurrency: n,
    durationSeconds,
    requests: n,
    reqPerSec: n / durationSeconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    errors: answered.filter((answer) => answer.status === 0).length,
    non2xx: answered.filter((answer) => answer.status !== 0 && (answer.status < 200 || answer.status > 299)).length,
    statusCounts,
    cpuMsPerRequest,
    refunds: observed.figures,
    check: hotOrderCheck(observed, answers),
  };
}

/**
 * 9. Webhook ingestion: K orders paid asynchronously (202, processing), then
 * each charge's charge.succeeded event, signed as the provider signs it
 * (Standard Webhooks, src/payment-simulator/webhook-signer.ts), delivered c at a time
 * with every 5th delivery repeating an event sent just before (20%
 * duplicates, some while the first delivery is still in flight). Events/s
 * and p50/p99 of the deliveries; then the store: one payment, one journal,
 * one order.completed per order, one inbox row per event.
 */
async function webhookIngestion(bench: Bench): Promise<ScenarioResult> {
  const { store, settings, service } = bench;
  const concurrency = bench.levels[0];
  await store.clean();
  const orders = await seedOrders(service, `${bench.runId}-webhook`, settings.webhookOrders, Math.min(4, concurrency), {
    body: ASYNC_ORDER_BODY,
    status: 202,
  });
  await settle(bench);
  const events = new Map<string, { body: string; orderId: string }>();
  for (const order of orders) {
    const chargeKey = `charge:${order.id}`;
    const charge = await store.charge(chargeKey);
    if (!charge) throw new Error(`webhook scenario: no charge under ${chargeKey}`);
    const event = chargeEvent(
      'charge.succeeded',
      { chargeKey, chargeId: charge.id, amountMinor: charge.amountMinor, currency: charge.currency },
      new Date(),
    );
    events.set(event.id, {
      orderId: order.id,
      body: JSON.stringify({ type: event.type, timestamp: event.timestamp.toISOString(), data: event.data }),
    });
  }
  const schedule = duplicateSchedule([...events.keys()], Math.round(1 / WEBHOOK_DUPLICATE_SHARE));
  const signer = new WebhookSigner([WEBHOOK_SECRET]);
  const cpu = cpuMeter(service.pid, service.idleCpuMsPerSecond);
  const commands = storeMeter(service);
  const answered: { status: number; ms: number }[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < schedule.length) {
      const id = schedule[next++];
      const { body } = events.get(id)!;
      const begin = performance.now();
      try {
        const response = await fetch(`${service.baseUrl}/v1/webhooks/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...signer.sign(id, body, new Date()) },
          body,
        });
        await response.arrayBuffer();
        answered.push({ status: response.status, ms: performance.now() - begin });
      } catch {
        answered.push({ status: 0, ms: performance.now() - begin });
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const durationSeconds = (performance.now() - started) / 1000;
  await settle(bench);
  const orderIds = orders.map((order) => order.id);
  const effects = await store.webhookEffects(orderIds);
  const figures = webhookFigures(schedule, effects.payments);
  const statusCounts: Record<string, number> = {};
  for (const answer of answered) if (answer.status !== 0) statusCounts[answer.status] = (statusCounts[answer.status] ?? 0) + 1;
  const errors = answered.filter((answer) => answer.status === 0).length;
  const ok =
    figures.duplicateEffects === 0 &&
    effects.saved === orderIds.length &&
    effects.inbox === figures.distinctEvents &&
    effects.completedEvents === orderIds.length &&
    errors === 0 &&
    Object.keys(statusCounts).every((status) => status === '200');
  const check: CheckResult = {
    ok,
    detail:
      `${figures.duplicateEffects} duplicate effects; ${effects.saved} of ${orderIds.length} orders saved, ${effects.payments} payments, ` +
      `${effects.completedEvents} order.completed, ${effects.inbox} inbox rows for ${figures.distinctEvents} events; ${statusSummary(statusCounts)}`,
  };
  const result: ScenarioResult = {
    id: scenarioId.webhook(concurrency),
    title: `webhooks: signed events, ${WEBHOOK_DUPLICATE_SHARE * 100}% duplicates`,
    concurrency,
    durationSeconds,
    requests: answered.length,
    reqPerSec: answered.length / durationSeconds,
    p50Ms: percentile(
      answered.map((a) => a.ms),
      50,
    ),
    p99Ms: percentile(
      answered.map((a) => a.ms),
      99,
    ),
    errors,
    non2xx: answered.filter((a) => a.status !== 0 && (a.status < 200 || a.status > 299)).length,
    statusCounts,
    cpuMsPerRequest: cpu.perRequest(answered.length),
    ...commands(answered.length),
    webhooks: figures,
    check,
  };
  await store.clean();
  return result;
}

/**
 * Strangers at the webhook door (security review 3, SEC4-04): 64 KiB
 * deliveries that fail, at the bench's first concurrency level - (a) with no
 * webhook headers, refused on the headers (the body is never read), and (b)
 * well-formed headers with a signature no secret made, refused after the
 * body is read and its HMAC computed (node:crypto). Refusals/s and CPU per
 * refusal; nothing may reach the inbox. The review measured 2.55 ms CPU per
 * (b) with the pure-JS HMAC, 0.95 ms for an unauthenticated 64 KiB create.
 */
async function webhookRefusals(bench: Bench): Promise<ScenarioResult[]> {
  const body = JSON.stringify({ type: 'charge.succeeded', pad: 'x'.repeat(64 * 1024 - 48) });
  const webhook = (kind: 'headers' | 'signature'): Stranger => ({
    id: `webhook-refused-${kind}`,
    title:
      kind === 'headers'
        ? 'webhook stranger, no headers, 64 KiB (refused on headers)'
        : 'webhook stranger, bad signature, 64 KiB (read + HMAC)',
    path: () => '/v1/webhooks/payments',
    method: 'POST',
    body,
    headers: (next) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (kind === 'signature') {
        headers['webhook-id'] = `evt_stranger_${next}`;
        headers['webhook-timestamp'] = String(Math.floor(Date.now() / 1000));
        headers['webhook-signature'] = `v1,${Buffer.alloc(32, next % 256).toString('base64')}`;
      }
      return headers;
    },
  });
  const results = [await refuseStrangers(bench, webhook('headers')), await refuseStrangers(bench, webhook('signature'))];
  const inbox = (await bench.store.webhookEffects([])).inbox;
  for (const result of results) {
    if (inbox !== 0) result.check = { ok: false, detail: `${result.check?.detail}; ${inbox} inbox rows written` };
  }
  return results;
}

/**
 * The API's door for strangers (issue 39, item 3): calls without a valid API
 * key, refused 401 - (a) a create with no Authorization and a 1 KiB body,
 * refused before the body is read (app.setup.ts, refuseStrangersEarly); (b) a
 * create with a wrong bearer, the same; (c) a GET of an order with a wrong
 * bearer, refused by the API key guard inside Nest. Refusals/s and CPU per
 * refusal; nothing may be created.
 */
async function apiRefusals(bench: Bench): Promise<ScenarioResult[]> {
  const body = JSON.stringify({ ...(JSON.parse(ORDER_BODY) as object), pad: 'x'.repeat(1024) });
  const ordersBefore = await bench.store.db.collection('orders').countDocuments({});
  const create = (bearer: string | null): Stranger => ({
    id: bearer ? 'api-refused-create-bad-key' : 'api-refused-create-no-key',
    title: bearer ? 'API stranger, create, wrong API key, 1 KiB' : 'API stranger, create, no API key, 1 KiB',
    path: () => '/v1/orders',
    method: 'POST',
    body,
    headers: (next) => ({
      'content-type': 'application/json',
      'idempotency-key': `stranger-${next}`,
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    }),
  });
  const read: Stranger = {
    id: 'api-refused-get-bad-key',
    title: 'API stranger, GET /v1/orders/:id, wrong API key',
    path: (next) => `/v1/orders/ord_${next.toString(16).padStart(24, '0')}`,
    method: 'GET',
    headers: () => ({ authorization: 'Bearer not-a-key-of-this-service' }),
  };
  const results = [
    await refuseStrangers(bench, create(null)),
    await refuseStrangers(bench, create('not-a-key-of-this-service')),
    await refuseStrangers(bench, read),
  ];
  const ordersAfter = await bench.store.db.collection('orders').countDocuments({});
  for (const result of results) {
    if (ordersAfter !== ordersBefore)
      result.check = { ok: false, detail: `${result.check?.detail}; ${ordersAfter - ordersBefore} orders created` };
  }
  return results;
}

interface Stranger {
  id: string;
  title: string;
  method: 'GET' | 'POST';
  path: (next: number) => string;
  headers: (next: number) => Record<string, string>;
  body?: string;
}

/**
 * Sends a stranger's requests one at a time per worker (fetch, not autocannon:
 * each request is built fresh), at the bench's first concurrency level, on
 * the layer-on service: refusals/s, p50/p99 and CPU per refusal; every answer must be 401.
 */
async function refuseStrangers(bench: Bench, stranger: Stranger): Promise<ScenarioResult> {
  const { service, settings } = bench;
  const concurrency = bench.levels[0];
  const requests = settings.mode === 'quick' ? 400 : 2_000;
  const cpu = cpuMeter(service.pid, service.idleCpuMsPerSecond);
  const answered: { status: number; ms: number }[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next++ < requests) {
      const begin = performance.now();
      try {
        const response = await fetch(`${service.baseUrl}${stranger.path(next)}`, {
          method: stranger.method,
          headers: stranger.headers(next),
          body: stranger.body,
        });
        await response.arrayBuffer();
        answered.push({ status: response.status, ms: performance.now() - begin });
      } catch {
        answered.push({ status: 0, ms: performance.now() - begin });
      }
    }
  };
  await windowed(service, stranger.title, () => Promise.all(Array.from({ length: concurrency }, worker)));
  const durationSeconds = (performance.now() - started) / 1000;
  const statusCounts: Record<string, number> = {};
  for (const answer of answered) statusCounts[answer.status] = (statusCounts[answer.status] ?? 0) + 1;
  const ms = answered.map((a) => a.ms);
  const result: ScenarioResult = {
    id: `${stranger.id}-c${concurrency}`,
    title: stranger.title,
    concurrency,
    durationSeconds,
    requests: answered.length,
    reqPerSec: answered.length / durationSeconds,
    p50Ms: percentile(ms, 50),
    p99Ms: percentile(ms, 99),
    errors: statusCounts['0'] ?? 0,
    non2xx: answered.filter((a) => a.status !== 0 && (a.status < 200 || a.status > 299)).length,
    statusCounts,
    cpuMsPerRequest: cpu.perRequest(answered.length),
    check: { ok: Object.keys(statusCounts).every((status) => status === '401'), detail: statusSummary(statusCounts) },
  };
  console.log(
    `  ${result.title}: ${result.reqPerSec.toFixed(0)} refusals/s, ${result.cpuMsPerRequest?.toFixed(3) ?? '?'} ms CPU per refusal`,
  );
  return result;
}

/**
 * The orders and their refunds, read one after the other: a refund that
 * finishes between the two reads shows as an order out of step, so a
 * mismatch is read again after a pause and only one that stays is reported.
 */
async function observeRefunds(bench: Bench, orderIds: string[], answers: RefundAnswers, amountMinor: number) {
  const read = async () =>
    refundFigures(await bench.store.refundOrderStates(orderIds), await bench.store.refundsOf(orderIds), answers, amountMinor);
  const first = await read();
  if (first.problems.length === 0) return first;
  await sleep(2_000);
  return read();
}

/** Until no refund is pending in the service (a load run's last requests still inside it). */
async function drainRefunds(bench: Bench): Promise<void> {
  if (!(await bench.store.quiesceRefunds(30_000, 5_000)))
    process.stderr.write('  (note: refunds still pending 30 s after the load stopped; going on)\n');
}

// ---------------------------------------------------------------- run

function packageVersions(): Record<string, string | null> {
  const version = (...candidates: string[]): string | null => {
    for (const candidate of candidates) {
      const file = join(ROOT, candidate, 'package.json');
      if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? null;
    }
    return null;
  };
  return {
    mongoose: version('node_modules/mongoose'),
    mongodb: version('node_modules/mongodb'),
    'mongodb (used by mongoose)': version('node_modules/mongoose/node_modules/mongodb', 'node_modules/mongodb'),
    '@nestjs/core': version('node_modules/@nestjs/core'),
    '@nestjs/platform-fastify': version('node_modules/@nestjs/platform-fastify'),
    fastify: version('node_modules/@nestjs/platform-fastify/node_modules/fastify', 'node_modules/fastify'),
    autocannon: version('node_modules/autocannon'),
  };
}

async function serverVersion(store: BenchStore): Promise<string | null> {
  try {
    const info = await store.db.admin().command({ buildInfo: 1 });
    return typeof info.version === 'string' ? info.version : null;
  } catch {
    return null;
  }
}

async function runScenarios(bench: Bench, record: (result: ScenarioResult, seconds: number) => void): Promise<void> {
  // The steps are listed first and run after, so that each one can say "i of N" as it starts (issue 36 item 7:
  // never silent for more than one measured window).
  const steps: { name: string; run: () => Promise<ScenarioResult | ScenarioResult[]> }[] = [];
  const step = (name: string, run: () => Promise<ScenarioResult | ScenarioResult[]>) => steps.push({ name, run });
  // --redis alone: only the scenarios the fast path serves (replay, duplicates, hot key); --only overrides.
  const only = bench.settings.only ?? (bench.redisService ? REDIS_FAMILIES : undefined);
  const wanted = (family: ScenarioFamily) => !only || only.includes(family);
  /** The same scenario again on the Redis service, recorded under the `-redis` id. */
  const alsoWithRedis = (name: string, run: (target: Bench) => Promise<ScenarioResult | ScenarioResult[]>) => {
    step(name, () => run(bench));
    if (!bench.redisService) return;
    const withRedis: Bench = { ...bench, service: bench.redisService, runId: `${bench.runId}r` };
    step(`${name} [Redis]`, async () =>
      [await run(withRedis)]
        .flat()
        .map((result) => ({ ...result, id: `${result.id}${REDIS_ID_SUFFIX}`, title: `${result.title} [Redis]` })),
    );
  };
  const levels = bench.levels;
  if (wanted('floor')) for (const c of levels) step(`create floor, bare driver, c${c}`, () => floor(bench, c));
  if (wanted('create')) for (const c of levels) step(`create, layer on, c${c}`, () => createUniqueKeys(bench, c, 'on'));
  if (wanted('layer-off')) for (const c of levels) step(`create, layer off, c${c}`, () => createUniqueKeys(bench, c, 'off'));
  if (wanted('replay')) alsoWithRedis('replay, GET, read floor, /health/live (8 rows)', replayAndGet);
  // Peers (issue 39 item 4): @node-idempotency/nestjs on the same routes, right after our replay and GET rows.
  if (wanted('peers') && bench.settings.peers) step('peers: @node-idempotency/nestjs, memory and Redis (4 rows)', () => peers(bench));
  if (wanted('mixed')) alsoWithRedis('mixed, 5% duplicate keys', mixedDuplicates);
  if (wanted('hot-key')) alsoWithRedis('hot key', hotKey);
  if (wanted('growth')) step('growth', () => growth(bench));
  if (wanted('refund')) {
    step('refund throughput', () => refundThroughput(bench));
    step('hot order refunds', () => refundHotOrder(bench));
  }
  if (wanted('webhook')) {
    step('webhook ingestion', () => webhookIngestion(bench));
    step('webhook strangers (2 rows)', () => webhookRefusals(bench));
  }
  if (wanted('strangers')) step('API strangers (3 rows)', () => apiRefusals(bench));
  for (const [index, { name, run }] of steps.entries()) {
    progress(`${index + 1} of ${steps.length}: ${name}`);
    await remeasureIdle(bench);
    const started = Date.now();
    const results = [await run()].flat();
    for (const result of results) record(result, (Date.now() - started) / 1000 / results.length);
  }
}

/** Idle CPU sampled again before each step (bench/service.ts resampleIdleCpu): what the step's rows leave out. */
async function remeasureIdle(bench: Bench): Promise<void> {
  const processes = [bench.service, bench.layerOff, bench.limitsOff, bench.floor, ...(bench.redisService ? [bench.redisService] : [])];
  const rates = await resampleIdleCpu(processes);
  progress(`  idle CPU now: ${rates.map((rate) => rate.toFixed(1)).join(' / ')} ms per second`);
}

const benchStarted = Date.now();
/** A line with the time since the start: what the benchmark is doing now. */
function progress(line: string): void {
  console.log(`  (${((Date.now() - benchStarted) / 1000).toFixed(0).padStart(4)} s) ${line}`);
}

/** Stops the services (V8 writes a profile on exit) and prints each one's top frames by self time. */
async function reportProfiles(services: ServiceProcess[], dir: string): Promise<void> {
  // Beside the profiles: which window was which scenario, for a closer look than the tables below.
  mkdirSync(dir, { recursive: true });
  const windows = profileWindows.map(({ pid, label, window }) => ({ pid, label, ...window }));
  writeFileSync(join(dir, 'windows.json'), JSON.stringify(windows, null, 2));
  for (const service of services) {
    await service.stop();
    const folder = join(dir, profileFolder(service.name));
    const files = existsSync(folder) ? readdirSync(folder).filter((file) => file.endsWith('.cpuprofile')) : [];
    if (files.length === 0) {
      console.log(`No CPU profile was written for ${service.name}`);
      continue;
    }
    const profile = JSON.parse(readFileSync(join(folder, files[0]), 'utf8')) as CpuProfile;
    const root = ROOT.replace(/\/$/, '');
    const labels = [...new Set(profileWindows.filter((w) => w.pid === service.pid).map((w) => w.label))];
    for (const label of labels) {
      const windows = profileWindows.filter((w) => w.pid === service.pid && w.label === label).map((w) => w.window);
      console.log(`\nTop frames by self time, ${service.name}, ${label} (measured window only):`);
      console.log(formatFrames(topFramesIn(profile, 15, root, windows)));
      console.log(`\nSelf time by owner (package, folder of ours, Node module), ${service.name}, ${label}:`);
      console.log(formatFrames(topOwnersIn(profile, 15, root, windows)));
    }
    console.log(
      `\nTop frames by self time, ${service.name} (${join(folder, files[0])}):\n${formatFrames(topFrames(profile, 15, ROOT.replace(/\/$/, ''), service.readyAfterMs))}`,
    );
  }
}

/** Every results file kept in bench/results/ that this version reads (older schemas are left out, said once). */
function keptRuns(dir: string): BenchResults[] {
  const runs: BenchResults[] = [];
  let unreadable = 0;
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.json') && !name.endsWith('.tmp.json'))) {
    try {
      runs.push(parseResults(readFileSync(join(dir, file), 'utf8')));
    } catch {
      unreadable++;
    }
  }
  if (unreadable > 0) console.log(`  (history chart: ${unreadable} results file(s) of an older format left out)`);
  return runs;
}

const profileFolder = (name: string) => name.replace(/[^a-z0-9]+/gi, '-').replace(/-$/, '');

/** --redis: a redis-server of the run's own, and a third service (layer on) using it. */
async function startRedisService(
  options: Omit<Parameters<typeof startService>[0], 'name' | 'disableIdempotency'>,
  cleanups: (() => Promise<void>)[],
): Promise<ServiceProcess> {
  const found = findRedisServer();
  if ('missing' in found) throw new Error(`--redis: ${found.missing}`);
  const redis = await startRedisServer();
  cleanups.push(() => redis.stop());
  // Behind a command counter like the layer-on service: a replay from Redis sends no store command (issue 47 item 4).
  const counter = await CommandCounter.start(options.mongoUri);
  cleanups.push(() => counter.close());
  const service = await startService({
    ...options,
    name: 'service (layer on, Redis)',
    disableIdempotency: false,
    redisUrl: redis.url,
    counter,
  });
  cleanups.push(() => service.stop());
  console.log(`  with Redis: ${service.baseUrl} -> redis-server ${redis.url} (idle CPU ${service.idleCpuMsPerSecond.toFixed(1)} ms/s)`);
  return service;
}

async function main(): Promise<number> {
  // --- events group (issue 45): `--only events` is its own run (bench/events.ts) ---
  if (eventsOnly(process.argv.slice(2))) return runEventsBench(process.argv.slice(2), ROOT);
  // --- end events group ---
  const settings = readSettings(process.argv.slice(2));
  const startedAt = new Date();
  const stamp = startedAt.getTime();
  const names = { db: `bench_${stamp}`, simulator: `bench_${stamp}_payment_simulator` };
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    while (cleanups.length > 0) await cleanups.pop()!().catch((error: Error) => process.stderr.write(`cleanup: ${error.message}\n`));
  };
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\n${signal}: stopping the services and the store\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const backend: MongoBackend = await resolveMongoBackend(process.env);
    cleanups.push(() => backend.stop());
    console.log(`MongoDB backend: ${backend.kind} - ${backend.description}`);
    if (backend.kind === 'emulator') console.log('  (the emulator: figures below say nothing about MongoDB)');

    const serviceOptions = {
      root: ROOT,
      mongoUri: backend.uri,
      dbName: names.db,
      simulatorDbName: names.simulator,
      paymentLatencyMs: settings.paymentLatencyMs,
      apiKeys: `${TENANT}:${SECRET}`,
      // Refusals measured one by one (SEC4-04): the per-source limit would turn them into 429s after 60.
      env: { WEBHOOK_SECRETS: WEBHOOK_SECRET, WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE: '0' },
    };
    const profileDir = join(ROOT, 'bench', 'profiles', resultsFileName(startedAt).replace(/\.json$/, ''));
    const profiled = (name: string) => (settings.profile ? { cpuProfileDir: join(profileDir, profileFolder(name)) } : {});
    // Store commands are counted at the wire, per process, for the create rows and the floor.
    const counters = await Promise.all([0, 1, 2].map(() => CommandCounter.start(backend.uri)));
    for (const counter of counters) cleanups.push(() => counter.close());
    const services = await Promise.allSettled([
      startService({
        ...serviceOptions,
        ...profiled('service (layer on)'),
        name: 'service (layer on)',
        disableIdempotency: false,
        counter: counters[0],
      }),
      startService({
        ...serviceOptions,
        ...profiled('service (layer off)'),
        name: 'service (layer off)',
        disableIdempotency: true,
        counter: counters[1],
      }),
      startService({ ...serviceOptions, name: 'service (rate limits off)', disableIdempotency: false, rateLimits: 'off' }),
      startFloor({ ...serviceOptions, ...profiled('floor (bare Fastify + driver)'), counter: counters[2] }),
    ]);
    for (const started of services) if (started.status === 'fulfilled') cleanups.push(() => started.value.stop());
    const failed = services.find((started) => started.status === 'rejected');
    if (failed) throw failed.reason;
    const [service, layerOff, limitsOff, floorProcess] = services.flatMap((started) =>
      started.status === 'fulfilled' ? [started.value] : [],
    );
    console.log(
      `Services ready: ${service.baseUrl} (layer on), ${layerOff.baseUrl} (layer off), ${limitsOff.baseUrl} (rate limits off), ` +
        `${floorProcess.baseUrl} (floor); database ${names.db}`,
    );
    console.log(
      `  rate limits on (all but the limits-off process): ${BENCH_RATE_LIMITS.perTenantPerMinute} per tenant, ` +
        `${BENCH_RATE_LIMITS.perKeyPerMinute} per key per minute; request logging at its default level`,
    );
    // --profile: the Redis service too, so a Redis replay has its by-owner profile (issue 47 item 5).
    const redisService = settings.redis
      ? await startRedisService({ ...serviceOptions, ...profiled('service (layer on, Redis)') }, cleanups)
      : undefined;
    console.log(
      `  idle CPU: ${[service, layerOff, limitsOff, floorProcess].map((p) => p.idleCpuMsPerSecond.toFixed(1)).join(' / ')} ms per second ` +
        `(left out of CPU per request)`,
    );

    const store = await BenchStore.connect(backend.uri, names.db, names.simulator);
    cleanups.push(() => store.close());
    if (backend.kind === 'uri') cleanups.push(() => store.dropBenchDatabases());
    const version = await serverVersion(store);

    const levels = levelsFor(settings, backend);
    if (!settings.levels && levels !== DEFAULT_LEVELS) {
      console.log(`  (emulator, quick: concurrency ${levels.join(', ')} instead of ${DEFAULT_LEVELS.join(', ')}; --concurrency overrides)`);
    }
    const bench: Bench = {
      settings,
      levels,
      store,
      service,
      layerOff,
      limitsOff,
      floor: floorProcess,
      redisService,
      runId: randomBytes(4).toString('hex'),
      backendKind: backend.kind,
      peerStart: {
        service: serviceOptions,
        cleanups,
        profiled,
        // The twin and the Redis peer are stopped when their step ends: their profiles are read then.
        reportProfiles: (processes) => (settings.profile ? reportProfiles(processes, profileDir) : Promise.resolve()),
      },
    };
    const scenarios: ScenarioResult[] = [];
    console.log(`Running (${settings.mode}: ${settings.durationSeconds} s per scenario, ${settings.warmupSeconds} s warm-up)...`);
    await runScenarios(bench, (result, seconds) => {
      scenarios.push(result);
      console.log(`  [${seconds.toFixed(1).padStart(4)} s] ${formatScenarioRow(result)}`);
    });

    const results: BenchResults = {
      schemaVersion: RESULTS_SCHEMA_VERSION,
      mode: settings.mode,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
        platform: os.platform(),
        arch: os.arch(),
        totalMemoryBytes: os.totalmem(),
        node: process.version,
      },
      packages: { ...packageVersions(), ...peerPackageVersions(ROOT, scenarios) },
      backend: { kind: backend.kind, description: version ? `${backend.description}, server ${version}` : backend.description },
      settings: {
        durationSeconds: settings.durationSeconds,
        warmupSeconds: settings.warmupSeconds,
        replayKeys: settings.replayKeys,
        duplicateRate: DUPLICATE_RATE,
        paymentLatencyMs: settings.paymentLatencyMs,
        concurrencyLevels: levels,
        hotKeyConcurrency: HOT_KEY_CONCURRENCY,
      },
      scenarios,
      ...(wireCounts.length > 0 ? { wireCounts } : {}),
      ratios: computeRatios(scenarios, [
        ...ratioDefinitions(bench.levels, bench.levels[0]),
        ...peerRatioDefinitions(scenarios, bench.levels[0], scenarioId.readFloor(bench.levels[0])),
        ...twinRatioDefinitions(scenarios, bench.levels[0]),
      ]),
    };
    console.log(`\n${formatReport(results)}`);
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, resultsFileName(startedAt));
    writeFileSync(file, serializeResults(results));
    console.log(`Results written to ${file}`);
    const before = settings.compare ? parseResults(readFileSync(settings.compare, 'utf8')) : undefined;
    const chart = file.replace(/\.json$/, '.svg');
    writeFileSync(chart, renderChart(results, before));
    console.log(`Chart written to ${chart}${before ? ` (before: ${settings.compare})` : ''}`);
    const history = join(dir, 'history.svg');
    writeFileSync(history, renderHistoryChart(keptRuns(dir)));
    console.log(`History chart (every run kept in bench/results/) written to ${history}`);
    if (backend.proxyStats) console.log(`Serializing proxy: ${JSON.stringify(backend.proxyStats)}`);
    if (settings.profile) await reportProfiles([service, layerOff, floorProcess, ...(redisService ? [redisService] : [])], profileDir);
    return runPassed(results) ? 0 : 1;
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`Benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
