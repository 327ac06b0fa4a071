import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  formatPeerComparison,
  isPeerRow,
  parseCommandStats,
  peerRatioDefinitions,
  peerReplayCheck,
  peerScenarioId,
  peerTitle,
  firstRequestCheck,
  twinRatioDefinitions,
  twinReplayCheck,
  twinScenarioId,
} from './peers-report.js';
import { allStatusCheck } from './report.js';
import { peerInstallProblems } from './peers.js';
import {
  computeRatios,
  formatReport,
  parseResults,
  ratioDefinitions,
  scenarioId,
  serializeResults,
  RESULTS_SCHEMA_VERSION,
  type BenchResults,
  type ScenarioResult,
} from './report.js';

function row(
  id: string,
  title: string,
  reqPerSec: number,
  cpuMsPerRequest: number | null,
  extra: Partial<ScenarioResult> = {},
): ScenarioResult {
  return {
    id,
    title,
    concurrency: 4,
    durationSeconds: 2,
    requests: Math.round(reqPerSec * 2),
    reqPerSec,
    p50Ms: 1,
    p99Ms: 4,
    errors: 0,
    non2xx: 0,
    statusCounts: { '200': Math.round(reqPerSec * 2) },
    cpuMsPerRequest,
    check: { ok: true, detail: 'all 200' },
    ...extra,
  };
}

const ours = () => [
  row(scenarioId.replay(4), 'replay of completed keys', 1500, 0.9),
  row(scenarioId.get(4), 'GET /v1/orders/:id (same orders)', 2500, 0.6),
  row(scenarioId.readFloor(4), 'read floor: Fastify + findOne by _id', 4000, 0.3),
];
const peers = () => [
  row(peerScenarioId.replay('memory', 4), peerTitle.replay('memory'), 5000, 0.15),
  row(peerScenarioId.get('memory', 4), peerTitle.get('memory'), 3000, 0.45),
  row(peerScenarioId.replay('redis', 4), peerTitle.replay('redis'), 3000, 0.3),
  row(peerScenarioId.get('redis', 4), peerTitle.get('redis'), 3000, 0.5),
];

function results(scenarios: ScenarioResult[]): BenchResults {
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    mode: 'quick',
    startedAt: '2026-12-02T00:00:00.000Z',
    finishedAt: '2026-12-02T00:01:00.000Z',
    machine: { cpus: 2, cpuModel: 'test', platform: 'linux', arch: 'x64', totalMemoryBytes: 1, node: 'v24.0.0' },
    packages: { '@node-idempotency/nestjs (peer)': '1.0.4' },
    backend: { kind: 'emulator', description: 'test' },
    settings: {
      durationSeconds: 2,
      warmupSeconds: 1,
      replayKeys: 20,
      duplicateRate: 0.05,
      paymentLatencyMs: 0,
      concurrencyLevels: [4, 16],
      hotKeyConcurrency: 64,
    },
    scenarios,
    ratios: computeRatios(scenarios, [...ratioDefinitions([4, 16], 4), ...peerRatioDefinitions(scenarios, 4, scenarioId.readFloor(4))]),
  };
}

describe('peer rows: ids and titles', () => {
  it('names the rows as the issue does, with ids no row of ours starts with', () => {
    expect(peerTitle.replay('memory')).toBe('peer @node-idempotency (memory): replay');
    expect(peerTitle.get('redis')).toBe('peer @node-idempotency (Redis): GET');
    expect(peerScenarioId.replay('redis', 4)).toBe('peer-node-idempotency-redis-replay-c4');
    expect(peers().every(isPeerRow)).toBe(true);
    expect(ours().some(isPeerRow)).toBe(false);
    // The --redis comparison pairs ids ending in -redis, the history chart ratios by prefix: neither may catch a peer's.
    expect(peers().some((scenario) => scenario.id.endsWith('-redis'))).toBe(false);
  });
});

describe('peerReplayCheck', () => {
  const measured = { requests: 300, errors: 0, statusCounts: { '201': 300 } };

  it('passes when every answer was a replay and the peer inserted nothing', () => {
    expect(peerReplayCheck(measured, { replayed: 300, other: 0 }, 20, { before: 20, after: 20 })).toEqual({
      ok: true,
      detail: 'all 201 + Idempotent-Replayed over 20 keys; peer orders 20 -> 20',
    });
  });

  it('fails on an order inserted by a repeated key, even when the answers looked like replays', () => {
    const check = peerReplayCheck(measured, { replayed: 300, other: 0 }, 20, { before: 20, after: 21 });
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('1 order(s) inserted by replays');
  });

  it('fails on answers without the replay header, errors, or no answer at all', () => {
    const missingHeader = peerReplayCheck({ ...measured, statusCounts: { '201': 290, '409': 10 } }, { replayed: 280, other: 20 }, 20, {
      before: 20,
      after: 20,
    });
    expect(missingHeader).toEqual({ ok: false, detail: '20 not replayed (201: 290, 409: 10) over 20 keys; peer orders 20 -> 20' });
    expect(peerReplayCheck({ ...measured, errors: 2 }, { replayed: 300, other: 0 }, 20, { before: 20, after: 20 }).ok).toBe(false);
    expect(peerReplayCheck({ requests: 0, errors: 0, statusCounts: {} }, { replayed: 0, other: 0 }, 20, { before: 20, after: 20 }).ok).toBe(
      false,
    );
  });
});

describe('peerReplayCheck, Redis storage', () => {
  const measured = { requests: 200, errors: 0, statusCounts: { '201': 200 } };
  const orders = { before: 20, after: 20 };

  it('says how many Redis commands a replay cost (the peer: SET NX, then GET)', () => {
    expect(peerReplayCheck(measured, { replayed: 200, other: 0 }, 20, orders, { set: 200, get: 200 })).toEqual({
      ok: true,
      detail: 'all 201 + Idempotent-Replayed over 20 keys; peer orders 20 -> 20; Redis per replay: 1.00 SET NX, 1.00 GET',
    });
  });

  it('fails when redis-server served no GET: the row would not be what its title says', () => {
    const check = peerReplayCheck(measured, { replayed: 200, other: 0 }, 20, orders, { set: 0, get: 0 });
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('redis-server served no GET');
  });
});

describe('parseCommandStats', () => {
  it("reads the calls of each command from redis-server's INFO commandstats", () => {
    const info =
      '$180\r\n# Commandstats\r\ncmdstat_set:calls=212,usec=900,usec_per_call=4.25,rejected_calls=0,failed_calls=0\r\n' +
      'cmdstat_get:calls=211,usec=400,usec_per_call=1.90,rejected_calls=0,failed_calls=0\r\ncmdstat_info:calls=2,usec=80\r\n';
    expect(parseCommandStats(info)).toEqual({ set: 212, get: 211, info: 2 });
    expect(parseCommandStats('$0\r\n\r\n')).toEqual({});
  });
});

describe('allStatusCheck', () => {
  it('wants every answer with the one status and no error', () => {
    expect(allStatusCheck({ requests: 10, errors: 0, statusCounts: { '200': 10 } }, '200')).toEqual({ ok: true, detail: 'all 200' });
    expect(allStatusCheck({ requests: 10, errors: 0, statusCounts: { '200': 9, '404': 1 } }, '200')).toEqual({
      ok: false,
      detail: '200: 9, 404: 1; 0 errors',
    });
    expect(allStatusCheck({ requests: 0, errors: 3, statusCounts: {} }, '200').ok).toBe(false);
  });
});

describe('peerRatioDefinitions', () => {
  it('adds nothing to a run without peer rows (its ratios stay as they were)', () => {
    expect(peerRatioDefinitions(ours(), 4, scenarioId.readFloor(4))).toEqual([]);
  });

  it('divides each peer replay by its own GET and by the read floor our rows use, without a target', () => {
    const scenarios = [...ours(), ...peers()];
    const ratios = computeRatios(scenarios, peerRatioDefinitions(scenarios, 4, scenarioId.readFloor(4)));
    expect(ratios.map((ratio) => [ratio.id, ratio.numerator, ratio.denominator, ratio.basis, ratio.target])).toEqual([
      ['peer-memory-replay-vs-get-cpu-c4', 'peer-node-idempotency-memory-replay-c4', 'peer-node-idempotency-memory-get-c4', 'cpu', null],
      ['peer-memory-replay-vs-read-floor-cpu-c4', 'peer-node-idempotency-memory-replay-c4', 'read-floor-c4', 'cpu', null],
      ['peer-redis-replay-vs-get-cpu-c4', 'peer-node-idempotency-redis-replay-c4', 'peer-node-idempotency-redis-get-c4', 'cpu', null],
      ['peer-redis-replay-vs-read-floor-cpu-c4', 'peer-node-idempotency-redis-replay-c4', 'read-floor-c4', 'cpu', null],
    ]);
    expect(ratios.map((ratio) => ratio.value)).toEqual([0.15 / 0.45, 0.15 / 0.3, 0.3 / 0.5, 0.3 / 0.3]);
  });

  it('only for the storages measured (Redis skipped), and n/a without the floor row', () => {
    const memoryOnly = peers().slice(0, 2);
    const ratios = computeRatios(memoryOnly, peerRatioDefinitions(memoryOnly, 4, scenarioId.readFloor(4)));
    expect(ratios.map((ratio) => [ratio.id, ratio.value])).toEqual([
      ['peer-memory-replay-vs-get-cpu-c4', 0.15 / 0.45],
      ['peer-memory-replay-vs-read-floor-cpu-c4', null],
    ]);
  });
});

describe('formatPeerComparison', () => {
  const mine = [{ label: 'ours (@idempotent-orders)', replay: scenarioId.replay(4), get: scenarioId.get(4) }];

  it('prints nothing without peer rows', () => {
    expect(formatPeerComparison(ours(), mine, 4, scenarioId.readFloor(4))).toEqual([]);
  });

  it('sets each peer beside ours: CPU per replay and GET, their ratios to each other and to the floor, req/s', () => {
    const lines = formatPeerComparison([...ours(), ...peers()], mine, 4, scenarioId.readFloor(4));
    expect(lines[0]).toContain('Peers on the same routes (c4;');
    expect(lines[0]).toContain('cpu 0.30 ms');
    const cells = (label: string) =>
      lines
        .find((line) => line.includes(label))!
        .slice(40)
        .trim()
        .split(/\s+/);
    expect(cells('ours (@idempotent-orders)')).toEqual(['0.90', '0.60', '1.50', '3.00', '2.00', '1500', '2500']);
    expect(cells('peer @node-idempotency (memory)')).toEqual(['0.15', '0.45', '0.33', '0.50', '1.50', '5000', '3000']);
    expect(cells('peer @node-idempotency (Redis)')).toEqual(['0.30', '0.50', '0.60', '1.00', '1.67', '3000', '3000']);
  });

  it('leaves out lines without rows, and says n/a for a missing figure', () => {
    const lines = formatPeerComparison(peers().slice(0, 2), mine, 4, scenarioId.readFloor(4));
    expect(lines.some((line) => line.includes('ours'))).toBe(false);
    expect(lines.some((line) => line.includes('(Redis)'))).toBe(false);
    expect(lines[0]).toContain('cpu n/a ms');
    expect(lines.find((line) => line.includes('(memory)'))).toMatch(/0\.33\s+n\/a\s+n\/a/);
  });
});

describe('the report and the results file with peer rows', () => {
  it('prints the peer rows, their ratios and the comparison block, and a results file with them reads back', () => {
    const run = results([...ours(), ...peers()]);
    const text = formatReport(run);
    expect(text).toContain('peer @node-idempotency (memory): replay');
    expect(text).toContain('peer memory: replay / read floor (c4)');
    expect(text).toContain('Peers on the same routes');
    expect(parseResults(serializeResults(run))).toEqual(run);
  });

  it('a run without peers prints no peer block and no peer ratio', () => {
    const text = formatReport(results(ours()));
    expect(text).not.toContain('Peers on the same routes');
    expect(text).not.toContain('peer ');
  });
});

describe('peerInstallProblems', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const peerFolder = (installed: Record<string, string>) => {
    const dir = mkdtempSync(join(os.tmpdir(), 'peer-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ dependencies: { '@nestjs/core': '10.4.22', mongodb: '7.8.0' } }));
    for (const [name, version] of Object.entries(installed)) {
      mkdirSync(join(dir, 'node_modules', name), { recursive: true });
      writeFileSync(join(dir, 'node_modules', name, 'package.json'), JSON.stringify({ name, version }));
    }
    return dir;
  };

  it('none when every pinned dependency is in the folder at its version', () => {
    expect(peerInstallProblems(peerFolder({ '@nestjs/core': '10.4.22', mongodb: '7.8.0' }))).toEqual([]);
  });

  it('names what is missing or at another version (then the benchmark runs npm ci)', () => {
    expect(peerInstallProblems(peerFolder({ '@nestjs/core': '12.5.1' }))).toEqual([
      '@nestjs/core 12.5.1 (pinned 10.4.22)',
      'mongodb missing',
    ]);
  });
});

describe('the twin: the peer app with our package (issue 47 item 1)', () => {
  const rounds = (cpu: number[]) => cpu.map((cpuMsPerRequest) => ({ requests: 100, durationSeconds: 2, reqPerSec: 50, cpuMsPerRequest }));
  const replay = {
    requests: 100,
    errors: 0,
    statusCounts: { '201': 100 },
    store: { commandsPerRequest: 0, transactionsPerRequest: 0, abortsPerRequest: 0 },
  };

  it('passes a replay answered from Redis with no MongoDB command, and fails one that read MongoDB or never touched Redis', () => {
    const tally = { replayed: 100, other: 0 };
    expect(twinReplayCheck(replay, tally, 20, { before: 20, after: 20 }, 200)).toMatchObject({ ok: true });
    const read = { ...replay, store: { ...replay.store, commandsPerRequest: 1 } };
    expect(twinReplayCheck(read, tally, 20, { before: 20, after: 20 }, 200).detail).toMatch(/1\.00 MongoDB commands per replay/);
    expect(twinReplayCheck(replay, tally, 20, { before: 20, after: 20 }, 0).detail).toMatch(/redis-server served nothing/);
    expect(twinReplayCheck(replay, tally, 20, { before: 20, after: 21 }, 200)).toMatchObject({ ok: false });
  });

  it('passes first requests that each created one order, allowing what each load run cut off at its end', () => {
    const measured = { requests: 50, errors: 0, statusCounts: { '201': 50 } };
    expect(firstRequestCheck(measured, { created: 60, other: 0 }, { before: 0, after: 60 }, 4, 3)).toMatchObject({ ok: true });
    expect(firstRequestCheck(measured, { created: 60, other: 0 }, { before: 0, after: 72 }, 4, 3)).toMatchObject({ ok: true });
    expect(firstRequestCheck(measured, { created: 60, other: 0 }, { before: 0, after: 73 }, 4, 3)).toMatchObject({ ok: false });
    expect(firstRequestCheck(measured, { created: 60, other: 0 }, { before: 0, after: 59 }, 4, 3)).toMatchObject({ ok: false });
    expect(firstRequestCheck(measured, { created: 59, other: 1 }, { before: 0, after: 59 }, 4, 3).detail).toMatch(/1 not a fresh 201/);
  });

  it('divides the twin by the Redis peer round by round, with the targets 1.0 (replay) and 2.0 (first request)', () => {
    const scenarios = [
      row(twinScenarioId.replay(4), 'twin replay', 500, 0.3, { rounds: rounds([0.3, 0.25, 0.35, 0.3, 0.28]) }),
      row(peerScenarioId.replay('redis', 4), 'peer replay', 2000, 0.2, { rounds: rounds([0.2, 0.25, 0.2, 0.3, 0.2]) }),
      row(twinScenarioId.first(4), 'twin first', 10, 3, { rounds: rounds([3, 3, 3, 3, 3]) }),
      row(peerScenarioId.first('redis', 4), 'peer first', 100, 1, { rounds: rounds([1, 1.2, 1.6, 2, 1]) }),
    ];
    const ratios = computeRatios(scenarios, twinRatioDefinitions(scenarios, 4));
    expect(ratios.map((ratio) => [ratio.id, ratio.target, ratio.verdict])).toEqual([
      ['ours-pkg-vs-peer-redis-replay-cpu-c4', { max: 1 }, 'unsettled'],
      ['ours-pkg-vs-peer-redis-first-cpu-c4', { max: 2 }, 'unsettled'],
    ]);
    expect(ratios[0].value).toBeCloseTo(1.4);
    expect(twinRatioDefinitions(scenarios.slice(0, 1), 4)).toEqual([]);
  });
});
