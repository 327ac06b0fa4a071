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
};

export const peerTitle = {
  replay: (storage: PeerStorage) => `${peerName(storage)}: replay`,
  get: (storage: PeerStorage) => `${peerName(storage)}: GET`,
};

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
