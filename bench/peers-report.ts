/**
 * Peers in the same run (issue 39, item 4), the pure half: the peer rows' ids, their checks, their
 * ratios and the block that sets them beside ours. bench/peers.ts starts and measures the peer
 * processes; bench/peers-report.spec.ts tests this file. Types only from report.ts (it imports
 * formatPeerComparison from here: no import cycle at run time).
 */
import { statusSummary, type CheckResult, type Ratio, type ScenarioResult } from './report.js';

/** The peer's two storages, each its own process: `@node-idempotency/nestjs` with memory or Redis storage. */
export const PEER_STORAGES = ['memory', 'redis'] as const;
export type PeerStorage = (typeof PEER_STORAGES)[number];

const STORAGE_LABEL: Record<PeerStorage, string> = { memory: 'memory', redis: 'Redis' };

/** What the table calls the peer process of one storage. */
export const peerName = (storage: PeerStorage) => `peer @node-idempotency (${STORAGE_LABEL[storage]})`;

/** Row ids (`peer-node-idempotency-memory-replay-c4`): no id of ours starts with `peer-`. */
export const peerScenarioId = {
  replay: (storage: PeerStorage, concurrency: number) => `peer-node-idempotency-${storage}-replay-c${concurrency}`,
  get: (storage: PeerStorage, concurrency: number) => `peer-node-idempotency-${storage}-get-c${concurrency}`,
  /** The first request of a new key (issue 47): a POST with a fresh key each. */
  first: (storage: PeerStorage, concurrency: number) => `peer-node-idempotency-${storage}-first-c${concurrency}`,
};

export const peerTitle = {
  replay: (storage: PeerStorage) => `${peerName(storage)}: replay`,
  get: (storage: PeerStorage) => `${peerName(storage)}: GET`,
  first: (storage: PeerStorage) => `${peerName(storage)}: first request`,
};

/**
 * The twin (issue 47 item 1; bench/peers/ours-pkg.ts): the peer's bare app, route and handler with our
 * package in simple mode and its Redis fast path on the peer's redis-server. Its rows sit beside the
 * Redis peer's, measured in the same interleaved rounds.
 */
export const TWIN_NAME = 'twin: the peer app with ours (simple mode, Redis)';
export const twinScenarioId = {
  replay: (concurrency: number) => `ours-pkg-redis-replay-c${concurrency}`,
  first: (concurrency: number) => `ours-pkg-redis-first-c${concurrency}`,
};
export const twinTitle = { replay: `${TWIN_NAME}: replay`, first: `${TWIN_NAME}: first request` };

/**
 * On the peer's own ground, CPU per request: our replay no dearer than the peer's (both answer from
 * Redis); our first request at most twice the peer's (ours writes a durable record in MongoDB, in the
 * handler's transaction; the peer's writes Redis only).
 */
export const TWIN_TARGETS = { replay: { max: 1.0 }, first: { max: 2.0 } };

export const isPeerRow = (scenario: Pick<ScenarioResult, 'id'>) => scenario.id.startsWith('peer-');

/** What the replay run saw: answers that were 201 with `Idempotent-Replayed: true`, and every other. */
export interface ReplayTally {
  replayed: number;
  other: number;
}

/**
 * A peer replay is a replay when every answer was 201 with `Idempotent-Replayed: true` (the header the
 * peer sets on one) and the peer's collection holds as many orders after the replays as before: a
 * repeated key inserted nothing.
 */
export function peerReplayCheck(
  measured: Pick<ScenarioResult, 'requests' | 'errors' | 'statusCounts'>,
  tally: ReplayTally,
  keys: number,
  orders: { before: number; after: number },
  /** The Redis peer: SET and GET calls redis-server served over the measured window (its INFO commandstats). */
  redis?: { set: number; get: number },
): CheckResult {
  const problems: string[] = [];
  if (measured.requests === 0) problems.push('no response within the run');
  if (measured.errors > 0) problems.push(`${measured.errors} errors`);
  if (tally.other > 0) problems.push(`${tally.other} not replayed (${statusSummary(measured.statusCounts)})`);
  if (orders.after !== orders.before) problems.push(`${orders.after - orders.before} order(s) inserted by replays`);
  // A Redis row answered without Redis would be the memory row under another name.
  if (redis && redis.get === 0) problems.push('redis-server served no GET: the replays did not come from Redis');
  const perReplay = (calls: number) => (measured.requests > 0 ? calls / measured.requests : 0).toFixed(2);
  const counted =
    `over ${keys} keys; peer orders ${orders.before} -> ${orders.after}` +
    (redis ? `; Redis per replay: ${perReplay(redis.set)} SET NX, ${perReplay(redis.get)} GET` : '');
  return problems.length === 0
    ? { ok: true, detail: `all 201 + Idempotent-Replayed ${counted}` }
    : { ok: false, detail: `${problems.join('; ')} ${counted}` };
}

/**
 * The twin's replay: all 201 + `Idempotent-Replayed`, nothing inserted, and answered from Redis -
 * no MongoDB command per replay at the wire, and redis-server served commands over the window.
 */
export function twinReplayCheck(
  measured: Pick<ScenarioResult, 'requests' | 'errors' | 'statusCounts' | 'store'>,
  tally: ReplayTally,
  keys: number,
  orders: { before: number; after: number },
  redisCalls: number,
): CheckResult {
  const problems: string[] = [];
  if (measured.requests === 0) problems.push('no response within the run');
  if (measured.errors > 0) problems.push(`${measured.errors} errors`);
  if (tally.other > 0) problems.push(`${tally.other} not replayed (${statusSummary(measured.statusCounts)})`);
  if (orders.after !== orders.before) problems.push(`${orders.after - orders.before} order(s) inserted by replays`);
  const mongo = measured.store?.commandsPerRequest ?? null;
  // Under 0.05 per replay: the count subtracts the idle rate, so a stray poll is not a read per replay.
  if (mongo !== null && mongo >= 0.05) problems.push(`${mongo.toFixed(2)} MongoDB commands per replay (the fast path answers with none)`);
  if (redisCalls === 0) problems.push('redis-server served nothing: the replays did not come from Redis');
  const perReplay = measured.requests > 0 ? (redisCalls / measured.requests).toFixed(2) : '0';
  const counted = `over ${keys} keys; twin orders ${orders.before} -> ${orders.after}; MongoDB ${mongo === null ? 'n/a' : mongo.toFixed(2)}, Redis ${perReplay} commands per replay`;
  return problems.length === 0
    ? { ok: true, detail: `all 201 + Idempotent-Replayed ${counted}` }
    : { ok: false, detail: `${problems.join('; ')} ${counted}` };
}

/** What the first-request run saw: 201s that were not replays, and every other answer. */
export interface FirstTally {
  created: number;
  other: number;
}

/**
 * A first-request row (a fresh key each): every answer 201 and not a replay, and the collection grew by
 * one order per 201 - plus at most `concurrency` per load run (warm-up and windows) for the requests
 * each run's end cut off, which the process still finished.
 */
export function firstRequestCheck(
  measured: Pick<ScenarioResult, 'requests' | 'errors' | 'statusCounts'>,
  tally: FirstTally,
  orders: { before: number; after: number },
  concurrency: number,
  loads: number,
): CheckResult {
  const problems: string[] = [];
  if (measured.requests === 0) problems.push('no response within the run');
  if (measured.errors > 0) problems.push(`${measured.errors} errors`);
  if (tally.other > 0) problems.push(`${tally.other} not a fresh 201 (${statusSummary(measured.statusCounts)})`);
  const inserted = orders.after - orders.before;
  if (inserted < tally.created || inserted > tally.created + concurrency * loads) {
    problems.push(`${inserted} orders inserted for ${tally.created} created`);
  }
  const detail = `${tally.created} created, ${inserted} orders inserted`;
  return problems.length === 0 ? { ok: true, detail: `all 201, ${detail}` } : { ok: false, detail: `${problems.join('; ')}; ${detail}` };
}

/** Ours (the twin) over the Redis peer, replay and first request, where this run has both rows of a pair. */
export function twinRatioDefinitions(scenarios: readonly Pick<ScenarioResult, 'id'>[], concurrency: number): Omit<Ratio, 'value'>[] {
  const ids = new Set(scenarios.map((scenario) => scenario.id));
  const c = concurrency;
  const pairs = [
    { path: 'replay', ours: twinScenarioId.replay(c), peer: peerScenarioId.replay('redis', c), target: TWIN_TARGETS.replay },
    { path: 'first', ours: twinScenarioId.first(c), peer: peerScenarioId.first('redis', c), target: TWIN_TARGETS.first },
  ] as const;
  return pairs
    .filter((pair) => ids.has(pair.ours) && ids.has(pair.peer))
    .map((pair) => ({
      id: `ours-pkg-vs-peer-redis-${pair.path}-cpu-c${c}`,
      label: `twin / peer, Redis, ${pair.path === 'replay' ? 'replay' : 'first request'} (c${c})`,
      basis: 'cpu' as const,
      numerator: pair.ours,
      denominator: pair.peer,
      target: pair.target,
    }));
}

/** `INFO commandstats` of redis-server: calls per command (`cmdstat_set:calls=12,...` -> { set: 12 }). */
export function parseCommandStats(info: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[match[1].toLowerCase()] = Number(match[2]);
  return calls;
}

/**
 * The peers' CPU ratios, for the peers whose rows this run has (none: no ratio, so a run without
 * peers prints what it printed before): replay / GET of the same process, and replay / the read
 * floor - the same floor row our replay and GET are divided by. No targets: those are this project's.
 */
export function peerRatioDefinitions(
  scenarios: readonly Pick<ScenarioResult, 'id'>[],
  concurrency: number,
  readFloorId: string,
): Omit<Ratio, 'value'>[] {
  const ids = new Set(scenarios.map((scenario) => scenario.id));
  const c = concurrency;
  const measured = PEER_STORAGES.filter((storage) => ids.has(peerScenarioId.replay(storage, c)) || ids.has(peerScenarioId.get(storage, c)));
  return measured.flatMap((storage): Omit<Ratio, 'value'>[] => {
    const replay = peerScenarioId.replay(storage, c);
    const label = `peer ${STORAGE_LABEL[storage]}:`;
    return [
      {
        id: `peer-${storage}-replay-vs-get-cpu-c${c}`,
        label: `${label} replay / GET (c${c})`,
        basis: 'cpu',
        numerator: replay,
        denominator: peerScenarioId.get(storage, c),
        target: null,
      },
      {
        id: `peer-${storage}-replay-vs-read-floor-cpu-c${c}`,
        label: `${label} replay / read floor (c${c})`,
        basis: 'cpu',
        numerator: replay,
        denominator: readFloorId,
        target: null,
      },
    ];
  });
}

/** One line of the comparison: a replay row and the GET row of the same process. */
export interface ReadRows {
  label: string;
  replay: string;
  get: string;
}

/**
 * Ours and the peers on the same routes, one line each: CPU per replay and per GET, replay / GET,
 * replay and GET / read floor (all CPU), and req/s of both. Lines whose rows this run lacks are left
 * out; no peer row, no block (older files, `--no-peers`).
 */
export function formatPeerComparison(
  scenarios: readonly ScenarioResult[],
  ours: readonly ReadRows[],
  concurrency: number,
  readFloorId: string,
): string[] {
  const peers: ReadRows[] = PEER_STORAGES.map((storage) => ({
    label: peerName(storage),
    replay: peerScenarioId.replay(storage, concurrency),
    get: peerScenarioId.get(storage, concurrency),
  }));
  const byId = new Map(scenarios.map((scenario) => [scenario.id, scenario]));
  const present = (rows: ReadRows) => byId.has(rows.replay) || byId.has(rows.get);
  if (!peers.some(present)) return [];
  const cpu = (id: string) => byId.get(id)?.cpuMsPerRequest ?? null;
  const rate = (id: string) => byId.get(id)?.reqPerSec ?? null;
  const divide = (top: number | null, bottom: number | null) => (top === null || bottom === null || bottom <= 0 ? null : top / bottom);
  const show = (value: number | null, digits: number, width: number) => (value === null ? 'n/a' : value.toFixed(digits)).padStart(width);
  const floor = cpu(readFloorId);
  const header =
    `  ${''.padEnd(38)} ${'replay cpu'.padStart(10)} ${'GET cpu'.padStart(8)} ${'replay/GET'.padStart(10)} ` +
    `${'replay/floor'.padStart(12)} ${'GET/floor'.padStart(9)} ${'replay req/s'.padStart(12)} ${'GET req/s'.padStart(9)}`;
  return [
    `Peers on the same routes (c${concurrency}; CPU ms per request of each process, from /proc, idle left out; ` +
      `floor = the read floor row, cpu ${floor === null ? 'n/a' : floor.toFixed(2)} ms):`,
    header,
    ...[...ours, ...peers]
      .filter(present)
      .map(
        (rows) =>
          `  ${rows.label.padEnd(38)} ${show(cpu(rows.replay), 2, 10)} ${show(cpu(rows.get), 2, 8)} ` +
          `${show(divide(cpu(rows.replay), cpu(rows.get)), 2, 10)} ${show(divide(cpu(rows.replay), floor), 2, 12)} ` +
          `${show(divide(cpu(rows.get), floor), 2, 9)} ${show(rate(rows.replay), 0, 12)} ${show(rate(rows.get), 0, 9)}`,
      ),
    '',
  ];
}
