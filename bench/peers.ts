/**
 * Peers in the same run (issue 39, item 4): `@node-idempotency/nestjs` on the same routes as ours -
 * replay and GET, with memory storage and with Redis storage, each in its own process, measured as
 * our rows are (run.ts's measure: CPU from /proc over the window, idle CPU left out, store commands
 * at the wire) and divided by the same read floor row.
 *
 * The peer needs Nest 9 or 10 and this project is on Nest 12, so it cannot share the root install:
 * it lives in bench/peers/node-idempotency/ (plain CommonJS, its own package.json and lock), installed
 * here with `npm ci` when its node_modules is missing or out of step with its pins. No install, no
 * peer rows - with a line saying why. The pure half (ids, checks, ratios, the comparison) is
 * bench/peers-report.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { basename, dirname, join, relative } from 'node:path';
import { CommandCounter } from './command-counter.js';
import { runLoad, type LoadMeasurement, type RequestSpec } from './load.js';
import {
  PEER_STORAGES,
  TWIN_NAME,
  firstRequestCheck,
  isPeerRow,
  twinReplayCheck,
  twinScenarioId,
  twinTitle,
  type FirstTally,
  parseCommandStats,
  peerName,
  peerReplayCheck,
  peerScenarioId,
  peerTitle,
  type PeerStorage,
  type ReplayTally,
} from './peers-report.js';
import { findRedisServer, startRedisServer } from './redis-server.js';
import { allStatusCheck, type ScenarioResult } from './report.js';
import { mergeRounds } from './rounds.js';
import { resampleIdleCpu, startService, type ServiceOptions, type ServiceProcess } from './service.js';
import { twinDbName, type BenchStore } from './store.js';

/** A measured load run, as run.ts's measure() returns it. */
export type Measured = Omit<ScenarioResult, 'id' | 'title' | 'concurrency' | 'check'>;

/** What run.ts hands over: its settings, its store, and the helpers our replay and GET rows are measured with. */
export interface PeerRun {
  root: string;
  /** The options our services were started with (store URI, bench database); name, script, env and counter are the peer's own. */
  service: Omit<ServiceOptions, 'name' | 'disableIdempotency' | 'script' | 'env' | 'counter'>;
  /** run.ts's list of things to stop at the end (also on an error or Ctrl-C). */
  cleanups: (() => Promise<void>)[];
  store: BenchStore;
  /** The concurrency of our replay and GET rows (the first level). */
  concurrency: number;
  warmupSeconds: number;
  durationSeconds: number;
  replayKeys: number;
  runId: string;
  /** Headers of our GET requests: the peer checks no API key, but gets the same bytes. */
  readHeaders: Record<string, string>;
  measure: (target: ServiceProcess, load: () => Promise<LoadMeasurement>, label?: string) => Promise<Measured>;
  /** POSTs `count` orders with fresh keys (our seeding, the same body): their keys and ids. */
  seed: (target: ServiceProcess, prefix: string, count: number, concurrency: number) => Promise<{ key: string; id: string }[]>;
  /** Our replay requests (the same POST, keys round-robin), counting answers that are not 201 + Idempotent-Replayed. */
  replayOf: (keys: string[]) => { tally: ReplayTally; requests: RequestSpec[] };
  /** Our create request with a fresh key each (prefix + a counter), counting 201s that were not replays and every other answer. */
  firstOf: (prefix: string) => { tally: FirstTally; requests: RequestSpec[] };
  /** Interleaved rounds of the twin and the Redis peer (--read-rounds): their ratios are judged round by round. */
  rounds: number;
  progress: (line: string) => void;
  /** --profile: the options that make a process write its V8 CPU profile (none without --profile). */
  profiled: (name: string) => { cpuProfileDir?: string };
  /** --profile: stops the processes and prints their top frames and owners per measured window (nothing without it). */
  reportProfiles: (processes: ServiceProcess[]) => Promise<void>;
}

export const peerDir = (root: string) => join(root, 'bench', 'peers', 'node-idempotency');
const peerCollection = (storage: PeerStorage) => `peer_node_idempotency_${storage}_orders`;
/** The twin's entry point, built by the root build from bench/peers/ours-pkg.ts. */
const twinScript = (root: string) => join(root, 'dist', 'bench', 'peers', 'ours-pkg.js');
const TWIN_COLLECTION = 'twin_ours_pkg_orders';
/**
 * First-request windows last at least this long: on the emulator the twin's first requests queue at
 * about 1 s each at c4 (bench/README.md, issue 47), and a 2 s window of a handful of requests would
 * be mostly idle CPU left out.
 */
const FIRST_REQUEST_MIN_SECONDS = 6;
const INSTALL_TIMEOUT_MS = 5 * 60_000;

/** The peer's rows (none, with the reason printed, when it cannot be installed or started). */
export async function peerRows(run: PeerRun): Promise<ScenarioResult[]> {
  const installed = await ensurePeerInstalled(run.root, run.progress);
  if (!installed.ok) {
    console.log(`  peers: skipped - ${installed.reason}`);
    return [];
  }
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    while (stops.length > 0) await stops.pop()!().catch(() => undefined);
  };
  try {
    let redisUrl: string | undefined;
    let redisPort: number | undefined;
    const found = findRedisServer();
    if ('missing' in found) console.log(`  peers: the Redis rows are skipped - ${found.missing}`);
    else {
      const redis = await startRedisServer();
      for (const list of [run.cleanups, stops]) list.push(() => redis.stop());
      redisUrl = redis.url;
      redisPort = redis.port;
    }
    const storages = PEER_STORAGES.filter((storage) => storage === 'memory' || redisUrl);
    run.progress(`  peers: starting ${[...storages.map(peerName), ...(redisUrl ? [TWIN_NAME] : [])].join(', ')}`);
    const started = await Promise.allSettled(storages.map((storage) => startPeer(run, storage, redisUrl, stops)));
    const twin = redisUrl ? await startTwin(run, redisUrl, stops).catch((error: Error) => error) : undefined;
    // Its whole message: the twin is our code, and its last output says why it did not start.
    if (twin instanceof Error) console.log(`  peers: the twin's rows are skipped - ${twin.message}`);
    // Idle CPU again once all have booted (as run.ts does for ours before each step): sampled at a boot, it is the boot's tail.
    const up = [
      ...started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : [])),
      ...(twin && !(twin instanceof Error) ? [twin] : []),
    ];
    const idle = await resampleIdleCpu(up);
    run.progress(`  peers: idle CPU ${idle.map((rate) => rate.toFixed(1)).join(' / ')} ms per second`);
    const rows: ScenarioResult[] = [];
    for (const [index, outcome] of started.entries()) {
      if (outcome.status === 'rejected') {
        console.log(`  peers: ${peerName(storages[index])} rows skipped - ${(outcome.reason as Error).message.split('\n')[0]}`);
        continue;
      }
      const storage = storages[index];
      if (storage === 'redis' && twin && !(twin instanceof Error) && redisPort !== undefined) {
        rows.push(...(await twinAgainstPeer(run, outcome.value, twin, redisPort)));
        await run.reportProfiles([twin, outcome.value]);
      } else rows.push(...(await replayAndGet(run, storage, outcome.value, storage === 'redis' ? redisPort : undefined)));
    }
    return rows;
  } finally {
    await stop();
  }
}

async function startPeer(run: PeerRun, storage: PeerStorage, redisUrl: string | undefined, stops: (() => Promise<void>)[]) {
  // Behind a command counter like our layer-on process and the floor: the same proxy hop, and the store commands per replay.
  const counter = await CommandCounter.start(run.service.mongoUri);
  for (const list of [run.cleanups, stops]) list.push(() => counter.close());
  const peer = await startService({
    ...run.service,
    // --profile: the Redis peer beside the twin, so the two replays have profiles to set side by side.
    ...(storage === 'redis' ? run.profiled(peerName(storage)) : {}),
    name: peerName(storage),
    script: join(peerDir(run.root), 'main.cjs'),
    disableIdempotency: false,
    counter,
    env: { PEER_STORAGE: storage, PEER_COLLECTION: peerCollection(storage), ...(redisUrl ? { PEER_REDIS_URL: redisUrl } : {}) },
  });
  for (const list of [run.cleanups, stops]) list.push(() => peer.stop());
  console.log(`  ${peer.name}: ${peer.baseUrl} (idle CPU ${peer.idleCpuMsPerSecond.toFixed(1)} ms/s)`);
  return peer;
}

/** The twin (bench/peers/ours-pkg.ts) behind a command counter, its fast path on the peers' redis-server. */
async function startTwin(run: PeerRun, redisUrl: string, stops: (() => Promise<void>)[]): Promise<ServiceProcess> {
  const counter = await CommandCounter.start(run.service.mongoUri);
  for (const list of [run.cleanups, stops]) list.push(() => counter.close());
  const twin = await startService({
    ...run.service,
    ...run.profiled(TWIN_NAME),
    name: TWIN_NAME,
    script: twinScript(run.root),
    disableIdempotency: false,
    counter,
    env: { MONGODB_DB_NAME: twinDbName(run.service.dbName), PEER_COLLECTION: TWIN_COLLECTION, PEER_REDIS_URL: redisUrl },
  });
  for (const list of [run.cleanups, stops]) list.push(() => twin.stop());
  console.log(`  ${twin.name}: ${twin.baseUrl} (idle CPU ${twin.idleCpuMsPerSecond.toFixed(1)} ms/s)`);
  return twin;
}

/**
 * Issue 47 item 1: the twin and the Redis peer on the same redis-server, taking turns (twin, peer,
 * twin, peer, ...) for `run.rounds` rounds, first on replays of K keys each, then on first requests
 * (a fresh key each); the peer's GET in one window between. Each row keeps its rounds, so their
 * ratios are medians with a range (bench/spread.ts).
 */
async function twinAgainstPeer(run: PeerRun, peer: ServiceProcess, twin: ServiceProcess, redisPort: number): Promise<ScenarioResult[]> {
  const c = run.concurrency;
  const collections = { peer: run.store.db.collection(peerCollection('redis')), twin: run.store.twinDb.collection(TWIN_COLLECTION) };
  await Promise.all([collections.peer.deleteMany({}), collections.twin.deleteMany({})]);
  const seeded = {
    peer: await run.seed(peer, `${run.runId}-peer-redis`, run.replayKeys, Math.min(4, c)),
    twin: await run.seed(twin, `${run.runId}-twin`, run.replayKeys, Math.min(4, c)),
  };
  const keys = { peer: seeded.peer.map((order) => order.key), twin: seeded.twin.map((order) => order.key) };
  const window = async (target: ServiceProcess, requests: RequestSpec[], label: string, round: number, seconds = run.durationSeconds) => {
    const load = (durationSeconds: number, labelled?: string) =>
      run.measure(target, () => runLoad({ baseUrl: target.baseUrl, connections: c, durationSeconds, requests }), labelled);
    const warmup = round === 0 ? run.warmupSeconds : 0;
    run.progress(`  ${label} (round ${round + 1} of ${run.rounds}): ${warmup} s warm-up, ${seconds} s measured`);
    if (warmup > 0) await load(warmup);
    const before = await redisCommandCalls(redisPort);
    const measured = await load(seconds, label);
    const after = await redisCommandCalls(redisPort);
    const calls = (command: string) => (after[command] ?? 0) - (before[command] ?? 0);
    const total = Object.keys(after).reduce((sum, command) => (command === 'info' ? sum : sum + calls(command)), 0);
    return { measured, redis: { set: calls('set'), get: calls('get'), total } };
  };

  type Windows = { measured: Measured; redis: { set: number; get: number; total: number } }[];
  const replays = { peer: [] as Windows, twin: [] as Windows };
  const replayTally = { peer: { replayed: 0, other: 0 }, twin: { replayed: 0, other: 0 } };
  const count = async () => ({ peer: await collections.peer.countDocuments({}), twin: await collections.twin.countDocuments({}) });
  const beforeReplays = await count();
  for (let round = 0; round < run.rounds; round++) {
    for (const side of ['twin', 'peer'] as const) {
      const replay = run.replayOf(keys[side]);
      const label = `${side === 'twin' ? twinTitle.replay : peerTitle.replay('redis')} c${c}`;
      replays[side].push(await window(side === 'twin' ? twin : peer, replay.requests, label, round));
      replayTally[side].replayed += replay.tally.replayed;
      replayTally[side].other += replay.tally.other;
    }
  }
  const afterReplays = await count();
  const reads: RequestSpec[] = [
    {
      method: 'GET',
      headers: run.readHeaders,
      setupRequest: (() => {
        let next = 0;
        return (request) => {
          request.path = `/v1/orders/${seeded.peer[next++ % seeded.peer.length].id}`;
          return request;
        };
      })(),
    },
  ];
  const got = (await window(peer, reads, `${peerTitle.get('redis')} c${c}`, 0)).measured;

  // First requests: both sides start each window from empty collections, as our rows do (BenchStore.clean):
  // on the emulator a growing collection slows every write, and the twin's records would grow by the round.
  const firsts = { peer: [] as Windows, twin: [] as Windows };
  const firstTally = { peer: { created: 0, other: 0 }, twin: { created: 0, other: 0 } };
  const inserted = { peer: 0, twin: 0 };
  const settled = () => new Promise((resolve) => setTimeout(resolve, 500));
  for (let round = 0; round < run.rounds; round++) {
    for (const side of ['twin', 'peer'] as const) {
      await (side === 'twin' ? run.store.cleanTwin(TWIN_COLLECTION) : collections.peer.deleteMany({}));
      const first = run.firstOf(`${run.runId}-${side}-first-${round}`);
      const label = `${side === 'twin' ? twinTitle.first : peerTitle.first('redis')} c${c}`;
      const seconds = Math.max(run.durationSeconds, FIRST_REQUEST_MIN_SECONDS);
      firsts[side].push(await window(side === 'twin' ? twin : peer, first.requests, label, round, seconds));
      // Requests the window's end cut off are still finishing in the process: let them land before counting.
      await settled();
      inserted[side] += await collections[side].countDocuments({});
      firstTally[side].created += first.tally.created;
      firstTally[side].other += first.tally.other;
    }
  }
  await Promise.all([collections.peer.deleteMany({}), run.store.cleanTwin(TWIN_COLLECTION)]);
  const beforeFirsts = { peer: 0, twin: 0 };
  const afterFirsts = inserted;

  const loads = run.rounds + (run.warmupSeconds > 0 ? 1 : 0);
  const merged = (windows: Windows) => mergeRounds(windows.map((w) => w.measured));
  const sum = (windows: Windows, pick: (redis: Windows[number]['redis']) => number) =>
    windows.reduce((total, w) => total + pick(w.redis), 0);
  const peerReplay = merged(replays.peer);
  const twinReplay = merged(replays.twin);
  const peerFirst = merged(firsts.peer);
  const twinFirst = merged(firsts.twin);
  const orders = (side: 'peer' | 'twin', from: { peer: number; twin: number }, to: { peer: number; twin: number }) => ({
    before: from[side],
    after: to[side],
  });
  return [
    {
      id: twinScenarioId.replay(c),
      title: twinTitle.replay,
      concurrency: c,
      ...twinReplay,
      check: twinReplayCheck(
        twinReplay,
        replayTally.twin,
        keys.twin.length,
        orders('twin', beforeReplays, afterReplays),
        sum(replays.twin, (r) => r.total),
      ),
    },
    {
      id: peerScenarioId.replay('redis', c),
      title: peerTitle.replay('redis'),
      concurrency: c,
      ...peerReplay,
      check: peerReplayCheck(peerReplay, replayTally.peer, keys.peer.length, orders('peer', beforeReplays, afterReplays), {
        set: sum(replays.peer, (r) => r.set),
        get: sum(replays.peer, (r) => r.get),
      }),
    },
    { id: peerScenarioId.get('redis', c), title: peerTitle.get('redis'), concurrency: c, ...got, check: allStatusCheck(got, '200') },
    {
      id: twinScenarioId.first(c),
      title: twinTitle.first,
      concurrency: c,
      ...twinFirst,
      check: firstRequestCheck(twinFirst, firstTally.twin, orders('twin', beforeFirsts, afterFirsts), c, loads),
    },
    {
      id: peerScenarioId.first('redis', c),
      title: peerTitle.first('redis'),
      concurrency: c,
      ...peerFirst,
      check: firstRequestCheck(peerFirst, firstTally.peer, orders('peer', beforeFirsts, afterFirsts), c, loads),
    },
  ];
}

/** As our replay and GET rows: K orders created through the peer, then replays of their keys and GETs of their ids. */
async function replayAndGet(run: PeerRun, storage: PeerStorage, peer: ServiceProcess, redisPort?: number): Promise<ScenarioResult[]> {
  const c = run.concurrency;
  const orders = run.store.db.collection(peerCollection(storage));
  await orders.deleteMany({});
  const seeded = await run.seed(peer, `${run.runId}-peer-${storage}`, run.replayKeys, Math.min(4, c));
  const keys = seeded.map((order) => order.key);
  const ids = seeded.map((order) => order.id);

  // The same warm-up and window as our rows (run.ts replayAndGet); the Redis commands counted over the measured window.
  const loaded = async (requests: () => RequestSpec[], label: string) => {
    const load = (durationSeconds: number, labelled?: string) =>
      run.measure(peer, () => runLoad({ baseUrl: peer.baseUrl, connections: c, durationSeconds, requests: requests() }), labelled);
    run.progress(`  ${label}: ${run.warmupSeconds} s warm-up, ${run.durationSeconds} s measured`);
    if (run.warmupSeconds > 0) await load(run.warmupSeconds);
    const redisBefore = redisPort === undefined ? undefined : await redisCommandCalls(redisPort);
    const measured = await load(run.durationSeconds, label);
    const redisAfter = redisPort === undefined ? undefined : await redisCommandCalls(redisPort);
    const served = (command: string) => (redisAfter?.[command] ?? 0) - (redisBefore?.[command] ?? 0);
    return { measured, redis: redisBefore ? { set: served('set'), get: served('get') } : undefined };
  };
  const reads = (): RequestSpec[] => {
    let next = 0;
    return [
      {
        method: 'GET',
        headers: run.readHeaders,
        setupRequest: (request) => {
          request.path = `/v1/orders/${ids[next++ % ids.length]}`;
          return request;
        },
      },
    ];
  };

  const before = await orders.countDocuments({});
  let replay = run.replayOf(keys);
  const { measured: replayed, redis } = await loaded(() => (replay = run.replayOf(keys)).requests, `${peerTitle.replay(storage)} c${c}`);
  const after = await orders.countDocuments({});
  const { measured: got } = await loaded(reads, `${peerTitle.get(storage)} c${c}`);
  await orders.deleteMany({});
  return [
    {
      id: peerScenarioId.replay(storage, c),
      title: peerTitle.replay(storage),
      concurrency: c,
      ...replayed,
      check: peerReplayCheck(replayed, replay.tally, keys.length, { before, after }, redis),
    },
    { id: peerScenarioId.get(storage, c), title: peerTitle.get(storage), concurrency: c, ...got, check: allStatusCheck(got, '200') },
  ];
}

/** Calls per command redis-server has served so far (`INFO commandstats`, inline protocol on a socket of its own). */
function redisCommandCalls(port: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = Buffer.alloc(0);
    socket.setTimeout(5_000);
    socket.once('connect', () => socket.write('INFO commandstats\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply = Buffer.concat([reply, chunk]);
      const header = /^\$(\d+)\r\n/.exec(reply.subarray(0, 32).toString('latin1'));
      if (header && reply.length >= header[0].length + Number(header[1])) {
        socket.destroy();
        resolve(parseCommandStats(reply.toString('utf8')));
      }
    });
    socket.once('error', reject);
    socket.once('timeout', () => {
      socket.destroy();
      reject(new Error(`redis-server on port ${port}: INFO commandstats timed out`));
    });
  });
}

// ---------------------------------------------------------------- the peer's own install

/** The peer's pinned dependencies (its package.json), each of which must sit in its own node_modules at that version. */
function pinnedDependencies(dir: string): Record<string, string> {
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies;
}

function installedVersion(dir: string, name: string): string | null {
  const file = join(dir, 'node_modules', name, 'package.json');
  return existsSync(file) ? ((JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version ?? null) : null;
}

/**
 * What is missing or out of step in the peer's node_modules (its own: the root's @nestjs/core is 12,
 * which Node would otherwise find one folder up).
 */
export function peerInstallProblems(dir: string): string[] {
  return Object.entries(pinnedDependencies(dir)).flatMap(([name, pinned]) => {
    const version = installedVersion(dir, name);
    if (version === pinned) return [];
    return [version === null ? `${name} missing` : `${name} ${version} (pinned ${pinned})`];
  });
}

/** `npm ci` in the peer's folder when its node_modules is missing or stale; the reason when that fails. */
export async function ensurePeerInstalled(
  root: string,
  progress: (line: string) => void,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const dir = peerDir(root);
  const where = relative(root, dir);
  if (!existsSync(join(dir, 'package-lock.json'))) return { ok: false, reason: `${where}/package-lock.json is missing` };
  const problems = peerInstallProblems(dir);
  if (problems.length === 0) return { ok: true };
  progress(
    `  peers: installing ${where} (npm ci --ignore-scripts: ${problems.length === Object.keys(pinnedDependencies(dir)).length ? 'not installed yet' : problems.join(', ')})`,
  );
  const { command, args } = npmCommand();
  const outcome = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !ROOT_NPM_SETTING.test(name)));
    env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
    const child = spawn(command, [...args, 'ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), INSTALL_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, output: error.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output: Buffer.concat(chunks).toString('utf8') });
    });
  });
  const left = peerInstallProblems(dir);
  if (outcome.code === 0 && left.length === 0) return { ok: true };
  // npm's first error lines say what failed (code, then the message); its last ones point at a log file.
  const lines = outcome.output.trim().split('\n');
  const errors = lines.filter((line) => /error (code|[A-Za-z]*Error)\b/.test(line)).slice(0, 2);
  const last = (errors.length > 0 ? errors : lines.slice(-3)).join(' | ');
  return {
    ok: false,
    reason: `npm ci in ${where} ${outcome.code === 0 ? `left ${left.join(', ')}` : `failed (exit ${outcome.code})`}: ${last || 'no output'}`,
  };
}

/**
 * What `npm run bench` leaves in the environment about the root project (its package, its prefix, its
 * workspaces): not for the peer's folder, a project of its own. The user's npm_config_* (registry,
 * proxy, cache, offline...) stay.
 */
const ROOT_NPM_SETTING = /^npm_(?!config_)|^npm_config_(local_prefix|prefix|global|workspaces?|include_workspace_root)$/i;

/** The npm that runs this benchmark (npm run bench), else npm beside this node, else npm on PATH. */
function npmCommand(): { command: string; args: string[] } {
  const execPath = process.env.npm_execpath;
  if (execPath && basename(execPath) === 'npm-cli.js' && existsSync(execPath)) return { command: process.execPath, args: [execPath] };
  return { command: 'npm', args: [] };
}

/** The peer's versions for the results file's `packages`, when this run has peer rows. */
export function peerPackageVersions(root: string, scenarios: readonly ScenarioResult[]): Record<string, string | null> {
  if (!scenarios.some(isPeerRow)) return {};
  const dir = peerDir(root);
  const nested = (parent: string, name: string) => installedVersion(dir, `${parent}/node_modules/${name}`) ?? installedVersion(dir, name);
  return {
    '@node-idempotency/nestjs (peer)': installedVersion(dir, '@node-idempotency/nestjs'),
    '@node-idempotency/core (peer)': installedVersion(dir, '@node-idempotency/core'),
    '@node-idempotency/storage-adapter-memory (peer)': installedVersion(dir, '@node-idempotency/storage-adapter-memory'),
    '@node-idempotency/storage-adapter-redis (peer)': installedVersion(dir, '@node-idempotency/storage-adapter-redis'),
    '@nestjs/core (peer)': installedVersion(dir, '@nestjs/core'),
    '@nestjs/platform-fastify (peer)': installedVersion(dir, '@nestjs/platform-fastify'),
    'fastify (peer)': nested('@nestjs/platform-fastify', 'fastify'),
    'mongodb (peer)': installedVersion(dir, 'mongodb'),
    'redis (peer)': nested('@node-idempotency/storage-adapter-redis', 'redis'),
  };
}
