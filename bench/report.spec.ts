import { describe, expect, it } from '@jest/globals';
import {
  EMULATOR_CAVEAT,
  computeRatios,
  formatRatioLine,
  findDuplicateOrders,
  formatRedisComparison,
  formatRefundFigures,
  formatWebhookFigures,
  duplicateSchedule,
  hotOrderCheck,
  tallyRefundAnswer,
  refundFigures,
  refundStoreFigures,
  refundThroughputCheck,
  webhookFigures,
  formatReport,
  measuringWindowSeconds,
  parseResults,
  percentile,
  ratioDefinitions,
  resultsFileName,
  runPassed,
  scenarioId,
  serializeResults,
  targetMet,
  RESULTS_SCHEMA_VERSION,
  ResultsFormatError,
  type BenchResults,
  type ScenarioResult,
} from './report.js';

function row(id: string, title: string, concurrency: number, reqPerSec: number, extra: Partial<ScenarioResult> = {}): ScenarioResult {
  return {
    id,
    title,
    concurrency,
    durationSeconds: 3,
    requests: Math.round(reqPerSec * 3),
    reqPerSec,
    p50Ms: 12,
    p99Ms: 48.25,
    errors: 0,
    non2xx: 0,
    statusCounts: { '201': Math.round(reqPerSec * 3) },
    cpuMsPerRequest: 2,
    check: { ok: true, detail: 'all 201' },
    ...extra,
  };
}

const LEVELS = [16, 64];

function sampleScenarios(): ScenarioResult[] {
  return [
    row(scenarioId.floor(16), 'floor: the same create, bare driver', 16, 2000, {
      statusCounts: {},
      cpuMsPerRequest: null,
      check: { ok: true, detail: '6000 creates, 0 failed' },
    }),
    row(scenarioId.floor(64), 'floor: the same create, bare driver', 64, 2500, { statusCounts: {}, cpuMsPerRequest: null, check: null }),
    row(scenarioId.create(16), 'create, unique keys', 16, 500, {
      cpuMsPerRequest: 4.6,
      store: { commandsPerRequest: 22, transactionsPerRequest: 3, abortsPerRequest: 0.01 },
    }),
    row(scenarioId.create(64), 'create, unique keys', 64, 625, { cpuMsPerRequest: 4.4 }),
    row(scenarioId.createLayerOff(16), 'create, unique keys, idempotency layer OFF', 16, 800, { cpuMsPerRequest: 4 }),
    row(scenarioId.createLayerOff(64), 'create, unique keys, idempotency layer OFF', 64, 1000, { cpuMsPerRequest: 4 }),
    row(scenarioId.replay(16), 'replay of completed keys', 16, 3000, { cpuMsPerRequest: 0.6 }),
    row(scenarioId.get(16), 'GET /v1/orders/:id (same orders)', 16, 4000, { statusCounts: { '200': 12000 }, cpuMsPerRequest: 0.5 }),
    row(scenarioId.mixed(16), 'mixed, 5% duplicate keys', 16, 450, {
      non2xx: 3,
      statusCounts: { '201': 1347, '409': 3 },
      check: { ok: true, detail: 'duplicate orders: 0; 67 repeated keys sent; 201: 1347, 409: 3' },
    }),
    row(scenarioId.hotKey(64), 'hot key: all clients on one key', 64, 3500, { non2xx: 40, statusCounts: { '201': 10460, '409': 40 } }),
  ];
}

function sampleResults(kind: BenchResults['backend']['kind'] = 'uri'): BenchResults {
  const scenarios = sampleScenarios();
  return {
    schemaVersion: RESULTS_SCHEMA_VERSION,
    mode: 'quick',
    startedAt: '2026-01-02T03:04:05.678Z',
    finishedAt: '2026-01-02T03:04:55.000Z',
    machine: { cpus: 2, cpuModel: 'Test CPU', platform: 'linux', arch: 'x64', totalMemoryBytes: 4 * 1024 ** 3, node: 'v20.20.2' },
    packages: { mongoose: '9.12.1', mongodb: '7.8.0', '@nestjs/core': '12.5.1', fastify: '5.1.0', autocannon: null },
    backend: { kind, description: kind === 'emulator' ? 'jongodb emulator' : 'MONGODB_URI' },
    settings: {
      durationSeconds: 3,
      warmupSeconds: 1,
      replayKeys: 20,
      duplicateRate: 0.05,
      paymentLatencyMs: 0,
      concurrencyLevels: LEVELS,
      hotKeyConcurrency: 64,
    },
    scenarios,
    ratios: computeRatios(scenarios, ratioDefinitions(LEVELS, 16)),
  };
}

describe('results file', () => {
  it('round-trips through serializeResults and parseResults unchanged', () => {
    const results = sampleResults();
    const parsed = parseResults(serializeResults(results));
    expect(parsed).toEqual(results);
  });

  it('keeps the ratios computed before writing', () => {
    const parsed = parseResults(serializeResults(sampleResults()));
    const value = (id: string) => parsed.ratios.find((ratio) => ratio.id === id)?.value;
    expect(value('create-vs-floor-c16')).toBeCloseTo(0.25);
    expect(value('create-vs-floor-c64')).toBeCloseTo(0.25);
    expect(value('replay-vs-get-cpu-c16')).toBeCloseTo(1.2);
    expect(value('layer-on-vs-off-c16')).toBeCloseTo(0.625);
    expect(value('layer-on-vs-off-c64')).toBeCloseTo(0.625);
    expect(value('replay-vs-create-c16')).toBeCloseTo(6);
    expect(value('replay-vs-get-c16')).toBeCloseTo(0.75);
  });

  it('rejects what is not a results file, naming the field', () => {
    const good = JSON.parse(serializeResults(sampleResults())) as Record<string, unknown>;
    const variant = (change: (copy: Record<string, any>) => void) => {
      const copy = structuredClone(good) as Record<string, any>;
      change(copy);
      return JSON.stringify(copy);
    };
    expect(() => parseResults('{not json')).toThrow(ResultsFormatError);
    expect(() => parseResults('[]')).toThrow('$ must be an object');
    expect(() => parseResults(variant((c) => (c.schemaVersion = 1)))).toThrow('$.schemaVersion must be 2');
    expect(() => parseResults(variant((c) => (c.ratios[0].basis = 'ops')))).toThrow('$.ratios[0].basis');
    expect(() => parseResults(variant((c) => (c.scenarios[2].cpuMsPerRequest = 'cheap')))).toThrow('$.scenarios[2].cpuMsPerRequest');
    expect(() => parseResults(variant((c) => (c.scenarios[2].store.commandsPerRequest = -1)))).toThrow(
      '$.scenarios[2].store.commandsPerRequest',
    );
    expect(() => parseResults(variant((c) => delete c.machine.cpus))).toThrow('$.machine.cpus');
    expect(() => parseResults(variant((c) => (c.scenarios[2].reqPerSec = -1)))).toThrow('$.scenarios[2].reqPerSec');
    expect(() => parseResults(variant((c) => (c.scenarios[0].p99Ms = 'fast')))).toThrow('$.scenarios[0].p99Ms');
    expect(() => parseResults(variant((c) => (c.scenarios[3].statusCounts = { ok: 1 })))).toThrow('not an HTTP status');
    expect(() => parseResults(variant((c) => (c.scenarios[1].id = c.scenarios[0].id)))).toThrow('appears twice');
    expect(() => parseResults(variant((c) => (c.backend.kind = 'sqlite')))).toThrow('$.backend.kind');
    expect(() => parseResults(variant((c) => (c.mode = 'medium')))).toThrow('$.mode');
    expect(() => parseResults(variant((c) => (c.startedAt = 'yesterday')))).toThrow('$.startedAt must be an ISO date');
    expect(() => parseResults(variant((c) => (c.ratios[0].value = 'high')))).toThrow('$.ratios[0].value');
    expect(() => parseResults(variant((c) => (c.scenarios[0].check = { ok: 'yes', detail: '' })))).toThrow('$.scenarios[0].check.ok');
  });

  it('names files by ISO date without characters some file systems refuse', () => {
    const name = resultsFileName(new Date('2026-01-02T03:04:05.678Z'));
    expect(name).toBe('2026-01-02T03-04-05.678Z.json');
    expect(name).not.toMatch(/[:\\/]/);
  });
});

describe('ratios', () => {
  const definition = (id: string, numerator: string, denominator: string, basis: 'req/s' | 'cpu' = 'req/s') =>
    ({ id, label: id, basis, numerator, denominator, target: null }) as const;

  it('divides req/s, or CPU per request, and gives null when a side is missing or zero', () => {
    const scenarios = [row('a', 'a', 1, 50, { cpuMsPerRequest: 3 }), row('b', 'b', 1, 200), row('z', 'z', 1, 0, { cpuMsPerRequest: null })];
    const ratios = computeRatios(scenarios, [
      definition('ab', 'a', 'b'),
      definition('ax', 'a', 'missing'),
      definition('az', 'a', 'z'),
      definition('ab-cpu', 'a', 'b', 'cpu'),
      definition('az-cpu', 'a', 'z', 'cpu'),
    ]);
    expect(ratios.map((ratio) => ratio.value)).toEqual([0.25, null, null, 1.5, null]);
  });

  it('defines create/floor and on/off per level, replay/create and replay/GET at the replay level, and the CPU ratios', () => {
    expect(ratioDefinitions([4, 16], 4).map((ratio) => `${ratio.id} ${ratio.basis}`)).toEqual([
      'create-vs-floor-c4 req/s',
      'create-vs-floor-c16 req/s',
      'layer-on-vs-off-c4 req/s',
      'layer-on-vs-off-c16 req/s',
      'replay-vs-create-c4 req/s',
      'replay-vs-get-c4 req/s',
      'layer-on-vs-off-cpu-c4 cpu',
      'layer-on-vs-off-cpu-c16 cpu',
      'replay-vs-get-cpu-c4 cpu',
      'get-vs-read-floor-cpu-c4 cpu',
      'replay-vs-read-floor-cpu-c4 cpu',
      'replay-redis-vs-read-floor-cpu-c4 cpu',
      'get-limits-cpu-c4 cpu',
      'replay-limits-cpu-c4 cpu',
      'health-limits-cpu-c4 cpu',
      'health-vs-hello-cpu-c4 cpu',
      'create-vs-floor-cpu-c4 cpu',
      'create-vs-floor-cpu-c16 cpu',
      'create-cpu-growth cpu',
      'layer-off-cpu-growth cpu',
      'floor-cpu-growth cpu',
    ]);
    expect(ratioDefinitions([4], 4).some((ratio) => ratio.id.endsWith('growth'))).toBe(false);
  });

  it('holds GET and replay to 1.3x the read floor, and a create at c64 to 1.2x its CPU at c16', () => {
    const scenarios = [
      ...sampleScenarios(),
      row(scenarioId.readFloor(16), 'read floor: Fastify + findOne by _id', 16, 6000, { cpuMsPerRequest: 0.4 }),
    ];
    const ratios = computeRatios(scenarios, ratioDefinitions(LEVELS, 16));
    const byId = (id: string) => ratios.find((ratio) => ratio.id === id)!;
    expect(byId('get-vs-read-floor-cpu-c16').value).toBeCloseTo(1.25);
    expect(targetMet(byId('get-vs-read-floor-cpu-c16'))).toBe(true);
    expect(byId('replay-vs-read-floor-cpu-c16').value).toBeCloseTo(1.5);
    expect(targetMet(byId('replay-vs-read-floor-cpu-c16'))).toBe(false);
    expect(byId('create-cpu-growth').value).toBeCloseTo(4.4 / 4.6);
    expect(targetMet(byId('create-cpu-growth'))).toBe(true);
  });

  it('says whether a target is met', () => {
    const [layer, , replay] = computeRatios(sampleScenarios(), ratioDefinitions(LEVELS, 16)).filter((ratio) => ratio.basis === 'cpu');
    expect(layer.value).toBeCloseTo(1.15);
    expect(targetMet(layer)).toBe(true);
    expect(targetMet({ ...replay, value: 1.6 })).toBe(false);
    expect(targetMet({ ...replay, target: null })).toBeNull();
  });
});

describe('ratios of rows measured in interleaved rounds (issue 47)', () => {
  const rounds = (cpu: number[]) => cpu.map((cpuMsPerRequest) => ({ requests: 100, durationSeconds: 2, reqPerSec: 50, cpuMsPerRequest }));
  const withRounds = (replay: number[], get: number[]) =>
    sampleScenarios().map((scenario) =>
      scenario.id === scenarioId.replay(16)
        ? { ...scenario, rounds: rounds(replay) }
        : scenario.id === scenarioId.get(16)
          ? { ...scenario, rounds: rounds(get) }
          : scenario,
    );
  const replayVsGet = (scenarios: ScenarioResult[]) =>
    computeRatios(scenarios, ratioDefinitions(LEVELS, 16)).find((ratio) => ratio.id === 'replay-vs-get-cpu-c16')!;

  it('is the median of the per-round ratios, with every round kept, and met only when the whole range is', () => {
    const ratio = replayVsGet(withRounds([0.6, 0.7, 0.65, 0.6, 0.72], [0.5, 0.5, 0.5, 0.5, 0.5]));
    expect(ratio.value).toBeCloseTo(1.3);
    expect(ratio.spread?.rounds).toHaveLength(5);
    expect(ratio.spread?.min).toBeCloseTo(1.2);
    expect(ratio.spread?.max).toBeCloseTo(1.44);
    expect(ratio.verdict).toBe('met');
    expect(formatRatioLine(ratio)).toMatch(
      /replay \/ GET \(c16\)\s+1\.30 \(1\.20-1\.44, 5 rounds\)\s+\(replay-c16 \/ get-c16\)\s+target <= 1\.5: met$/,
    );
  });

  it('is unsettled when its range straddles the target, and missed when all of it is past the target', () => {
    expect(replayVsGet(withRounds([0.6, 0.9, 0.65, 0.6, 0.7], [0.5, 0.5, 0.5, 0.5, 0.5])).verdict).toBe('unsettled');
    const missed = replayVsGet(withRounds([0.8, 0.9, 0.85, 0.8, 1], [0.5, 0.5, 0.5, 0.5, 0.5]));
    expect(missed.verdict).toBe('missed');
    expect(formatRatioLine(missed)).toMatch(/target <= 1\.5: MISSED$/);
  });

  it('says how many rounds it had when fewer than five, and round-trips through the results file', () => {
    const few = replayVsGet(withRounds([0.6, 0.6, 0.6], [0.5, 0.5, 0.5]));
    expect(formatRatioLine(few)).toMatch(/1\.20 \(1\.20-1\.20, 3 rounds\).*target <= 1\.5: met, 3 rounds$/);
    const results = { ...sampleResults(), scenarios: withRounds([0.6, 0.9, 0.65, 0.6, 0.7], [0.5, 0.5, 0.5, 0.5, 0.5]) };
    results.ratios = computeRatios(results.scenarios, ratioDefinitions(LEVELS, 16));
    expect(parseResults(serializeResults(results))).toEqual(results);
  });
});

describe('table', () => {
  it('prints one aligned row per scenario with req/s, p50, p99, errors, non-2xx and the check', () => {
    const lines = formatReport(sampleResults()).split('\n');
    const headerIndex = lines.findIndex((line) => line.startsWith('scenario'));
    expect(lines[headerIndex]).toMatch(/^scenario\s+conc\s+req\/s\s+p50 ms\s+p99 ms\s+cpu ms\/req\s+errors\s+non-2xx\s+check$/);
    expect(lines[headerIndex + 1]).toMatch(/^-+$/);
    const rows = lines.slice(headerIndex + 2, headerIndex + 12);
    expect(rows).toHaveLength(10);
    expect(rows[2]).toMatch(/^create, unique keys\s+16\s+500\.0\s+12\.0\s+48\.3\s+4\.60\s+0\s+0\s+ok: all 201$/);
    expect(rows[1]).toMatch(/^floor: the same create, bare driver\s+64\s+2500\.0\s+12\.0\s+48\.3\s+-\s+0\s+0\s+-$/);
    expect(rows[9]).toMatch(/^hot key: all clients on one key\s+64\s+3500\.0\s+12\.0\s+48\.3\s+2\.00\s+0\s+40\s+ok: all 201$/);
    // Same width up to the check column on every row.
    const checkColumn = lines[headerIndex].indexOf('check');
    for (const line of rows) expect(line.slice(checkColumn - 2, checkColumn)).toBe('  ');
  });

  it('prints the ratios, the checks summary, and no emulator caveat on a real MongoDB', () => {
    const text = formatReport(sampleResults('uri'));
    expect(text).toContain('Ratios (req/s):');
    expect(text).toMatch(/create \/ floor \(c16\)\s+0\.25 {3}\(create-c16 \/ floor-c16\) {3}target >= 0\.6: MISSED, 1 window/);
    expect(text).toContain('Ratios (service CPU per request; lower is cheaper):');
    expect(text).toMatch(
      /layer on \/ layer off \(c16\)\s+1\.15 {3}\(create-c16 \/ create-layer-off-c16\) {3}target <= 1\.15: met, 1 window/,
    );
    expect(text).toMatch(/replay \/ GET \(c16\)\s+1\.20 {3}\(replay-c16 \/ get-c16\) {3}target <= 1\.5: met, 1 window/);
    expect(text).toMatch(/layer on \/ layer off \(c64\)\s+0\.63/);
    expect(text).toMatch(/replay \/ create \(c16\)\s+6\.00/);
    expect(text).toMatch(/replay \/ GET \(c16\)\s+0\.75/);
    expect(text).toContain('Checks: all 9 passed.');
    expect(text).toContain('Machine: 2 CPUs (Test CPU), node v20.20.2');
    expect(text).toContain('autocannon ?');
    expect(text).not.toContain(EMULATOR_CAVEAT);
    expect(text).toMatch(/create, unique keys \(c16\)\s+22\.0 commands, 3\.00 transactions, 0\.01 aborted/);
  });

  it('reads a results file written before store counts existed', () => {
    const old = JSON.parse(serializeResults(sampleResults())) as { scenarios: Record<string, unknown>[] };
    for (const scenario of old.scenarios) delete scenario.store;
    expect(parseResults(JSON.stringify(old)).scenarios[2]).not.toHaveProperty('store');
  });

  it('prints the caveat under the table on the emulator, and n/a for a missing ratio', () => {
    const results = sampleResults('emulator');
    results.ratios = computeRatios(
      results.scenarios.filter((scenario) => scenario.id !== scenarioId.get(16)),
      ratioDefinitions(LEVELS, 16),
    );
    const text = formatReport(results);
    expect(text).toContain(`CAVEAT: ${EMULATOR_CAVEAT}`);
    expect(text.indexOf('CAVEAT')).toBeGreaterThan(text.indexOf('Ratios (req/s):'));
    expect(text).toMatch(/replay \/ GET \(c16\)\s+n\/a/);
  });
});

describe('checks', () => {
  it('fail the run on every backend, the serialized emulator included', () => {
    const failing = (kind: BenchResults['backend']['kind']) => {
      const results = sampleResults(kind);
      results.scenarios[8] = { ...results.scenarios[8], check: { ok: false, detail: 'duplicate orders: 2' } };
      return results;
    };
    expect(runPassed(sampleResults('uri'))).toBe(true);
    expect(runPassed(sampleResults('emulator'))).toBe(true);
    for (const kind of ['uri', 'mongod', 'emulator'] as const) expect(runPassed(failing(kind))).toBe(false);
    expect(formatReport(failing('emulator'))).toContain('Checks: FAILED 1 of 9: mixed-dup-c16.');
    expect(formatReport(failing('uri'))).toMatch(/mixed, 5% duplicate keys .* FAIL: duplicate orders: 2$/m);
  });
});

describe('measuringWindowSeconds', () => {
  const base = { baseSeconds: 2, warmupSeconds: 1, minRequests: 40, capSeconds: 15 };
  it('keeps the base window when the warm-up shows it is enough', () => {
    expect(measuringWindowSeconds({ ...base, warmupRequests: 100 })).toBe(2);
  });
  it('stretches it to what the warm-up throughput needs, up to the cap', () => {
    expect(measuringWindowSeconds({ ...base, warmupRequests: 8 })).toBe(5);
    expect(measuringWindowSeconds({ ...base, warmupRequests: 1 })).toBe(15);
  });
  it('takes the cap when the warm-up completed nothing, and the base when there was no warm-up', () => {
    expect(measuringWindowSeconds({ ...base, warmupRequests: 0 })).toBe(15);
    expect(measuringWindowSeconds({ ...base, warmupSeconds: 0, warmupRequests: 0 })).toBe(2);
  });
});

describe('percentile', () => {
  it('uses the nearest rank on unsorted samples', () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBe(0);
  });
});

describe('duplicate orders', () => {
  it('counts keys with more than one live order, ignoring failed attempts', () => {
    const duplicates = findDuplicateOrders([
      { recordId: 'k1', state: 'saved' },
      { recordId: 'k1', state: 'failed' },
      { recordId: 'k2', state: 'saved' },
      { recordId: 'k2', state: 'pending' },
      { recordId: 'k3', state: 'failed' },
      { recordId: 'k3', state: 'failed' },
    ]);
    expect(duplicates).toEqual([{ recordId: 'k2', liveOrders: 2 }]);
  });
});

describe('formatRedisComparison (--redis)', () => {
  it('pairs each scenario with its -redis run: req/s, p99 and CPU per request, before -> after', () => {
    const lines = formatRedisComparison([
      row('replay-c4', 'replay of completed keys', 4, 1000, { p99Ms: 10, cpuMsPerRequest: 0.5 }),
      row('get-c4', 'GET /v1/orders/:id', 4, 2000),
      row('replay-c4-redis', 'replay of completed keys [Redis]', 4, 1500, { p99Ms: 5, cpuMsPerRequest: 0.4 }),
    ]);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain('replay of completed keys');
    expect(lines[1]).toContain('req/s 1000 -> 1500 (+50%)');
    expect(lines[1]).toContain('p99 ms 10.0 -> 5.0 (-50%)');
    expect(lines[1]).toContain('cpu ms/req 0.50 -> 0.40 (-20%)');
  });

  it('prints nothing for a run without Redis', () => {
    expect(formatRedisComparison([row('replay-c4', 'replay', 4, 1000)])).toEqual([]);
  });
});

describe('refund figures', () => {
  const order = (id: string, capturedMinor: number, refundedMinor: number) => ({ id, capturedMinor, refundedMinor });
  const succeeded = (orderId: string, amountMinor: number) => ({ orderId, state: 'succeeded', amountMinor });

  it('sums the succeeded refunds per order from the store; names an over-refunded order and one out of step', () => {
    const figures = refundStoreFigures(
      [order('ord_a', 2500, 250), order('ord_b', 100, 150), order('ord_c', 100, 0)],
      [
        succeeded('ord_a', 125),
        succeeded('ord_a', 125),
        { orderId: 'ord_a', state: 'declined', amountMinor: 125 },
        succeeded('ord_b', 75),
        succeeded('ord_b', 75),
        succeeded('ord_c', 10),
        succeeded('ord_other', 999),
      ],
    );
    expect(figures).toEqual({
      storedSucceeded: 6,
      succeededSumMinor: 250 + 150 + 10,
      capturedMinor: 2700,
      overRefundedOrders: 1,
      mismatchedOrders: 1,
      problems: ['ord_b: succeeded refunds 150 > captured 100', 'ord_c: refundedMinor 0 != succeeded refunds 10'],
    });
  });

  it('hot order: 20 of 50 refunds of 125 succeed on 2500, 60% are 422, and the sum stays at the captured amount', () => {
    const refunds = Array.from({ length: 20 }, () => succeeded('ord_hot', 125));
    const answers = { succeeded: 20, exceeded: 30, other: [] };
    const figures = refundFigures([order('ord_hot', 2500, 2500)], refunds, answers, 125);
    expect(figures.figures).toMatchObject({
      orders: 1,
      succeeded: 20,
      exceeded: 30,
      exceededShare: 0.6,
      succeededSumMinor: 2500,
      capturedMinor: 2500,
    });
    expect(hotOrderCheck(figures, answers)).toEqual({
      ok: true,
      detail: 'succeeded sum 2500 <= captured 2500; 20 x 201, 30 x 422 (60%)',
    });
  });

  it('hot order: fails an over-refund, a 422 while there was room, other answers, and 201s the store does not hold', () => {
    const over = refundFigures(
      [order('ord_hot', 2500, 2625)],
      Array.from({ length: 21 }, () => succeeded('ord_hot', 125)),
      {
        succeeded: 21,
        exceeded: 29,
        other: [],
      },
      125,
    );
    expect(hotOrderCheck(over, { succeeded: 21, exceeded: 29, other: [] })).toMatchObject({
      ok: false,
      detail: expect.stringContaining('ord_hot: succeeded refunds 2625 > captured 2500') as unknown as string,
    });
    const early = refundFigures(
      [order('ord_hot', 2500, 1250)],
      Array.from({ length: 10 }, () => succeeded('ord_hot', 125)),
      {
        succeeded: 10,
        exceeded: 38,
        other: ['409', '500 internal'],
      },
      125,
    );
    const check = hotOrderCheck(early, { succeeded: 10, exceeded: 38, other: ['409', '500 internal'] });
    expect(check.ok).toBe(false);
    expect(check.detail).toContain('1 x 409, 1 x 500 internal');
    expect(check.detail).toContain('422 while the order still had room (1250 of 2500 refunded)');
    const lost = refundFigures(
      [order('ord_hot', 2500, 1250)],
      Array.from({ length: 10 }, () => succeeded('ord_hot', 125)),
      {
        succeeded: 11,
        exceeded: 0,
        other: [],
      },
      125,
    );
    expect(hotOrderCheck(lost, { succeeded: 11, exceeded: 0, other: [] }).detail).toContain('11 answered 201, 10 succeeded in the store');
  });

  it('throughput: every refund 201 and held by the store (which may hold more: answers cut off at the end)', () => {
    const orders = [order('ord_a', 2500, 15), order('ord_b', 2500, 10)];
    const refunds = [succeeded('ord_a', 5), succeeded('ord_a', 5), succeeded('ord_a', 5), succeeded('ord_b', 5), succeeded('ord_b', 5)];
    const answers = { succeeded: 4, exceeded: 0, other: [] };
    expect(refundThroughputCheck(refundFigures(orders, refunds, answers, 5), answers)).toEqual({
      ok: true,
      detail: 'all 4 refunds 201; succeeded refunds sum 25 <= captured 5000 over 2 orders',
    });
    const bad = { succeeded: 6, exceeded: 1, other: ['409'] };
    const detail = refundThroughputCheck(refundFigures(orders, refunds, bad, 5), bad).detail;
    expect(detail).toContain('1 x 422 refund_exceeds_captured (the orders had room)');
    expect(detail).toContain('1 x 409');
    expect(detail).toContain('6 refunds answered 201, only 5 succeeded in the store');
  });

  it('prints the refund rows under the table and keeps them through the results file', () => {
    const figures = refundFigures(
      [order('ord_hot', 2500, 2500)],
      Array.from({ length: 20 }, () => succeeded('ord_hot', 125)),
      {
        succeeded: 20,
        exceeded: 30,
        other: [],
      },
      125,
    );
    const stored = figures.figures;
    const hot = row(scenarioId.refundHotOrder(50), 'hot order: 50 concurrent partial refunds', 50, 40, {
      p99Ms: 812.5,
      statusCounts: { '201': 20, '422': 30 },
      refunds: stored,
    });
    expect(formatRefundFigures([hot, row('x', 'other', 1, 1)])).toEqual([
      'Refunds (sums read from the store after the run):',
      '  hot order: 50 concurrent partial refunds (c50)     20 x 201, 30 x 422 (60.0%), refunds of 125 over 1 order(s); p99 812.5 ms; ' +
        'succeeded sum 2500 <= captured 2500; 0 over-refunded, 0 out of step',
      '',
    ]);
    expect(formatRefundFigures([row('x', 'other', 1, 1)])).toEqual([]);
    const results = { ...sampleResults(), scenarios: [...sampleScenarios(), hot] };
    expect(parseResults(serializeResults(results))).toEqual(results);
    expect(formatReport(results)).toContain('Refunds (sums read from the store after the run):');
    expect(() => parseResults(serializeResults({ ...results, scenarios: [{ ...hot, refunds: { ...stored, exceeded: -1 } }] }))).toThrow(
      '$.scenarios[0].refunds.exceeded must be a finite number >= 0',
    );
  });
});

describe('refund answers', () => {
  it('tells a 201, a 422 refund_exceeds_captured and anything else (by status and code) apart', () => {
    const answers = { succeeded: 0, exceeded: 0, other: [] as string[] };
    tallyRefundAnswer(answers, 201, '{"id":"rfd_1"}');
    tallyRefundAnswer(answers, 422, '{"code":"refund_exceeds_captured"}');
    tallyRefundAnswer(answers, 422, '{"code":"idempotency_key_reused"}');
    tallyRefundAnswer(answers, 409, 'not json');
    tallyRefundAnswer(answers, 0, 'fetch failed');
    expect(answers).toEqual({ succeeded: 1, exceeded: 1, other: ['422 idempotency_key_reused', '409', 'no answer'] });
  });
});

describe('webhook figures', () => {
  it('sends every event once and repeats a recent one every 5th delivery (20% duplicates)', () => {
    const ids = Array.from({ length: 12 }, (_, i) => `evt_${i}`);
    const schedule = duplicateSchedule(ids, 5);
    expect(schedule.slice(0, 10)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_3', 'evt_4', 'evt_5', 'evt_6', 'evt_7', 'evt_6']);
    expect(new Set(schedule)).toEqual(new Set(ids));
    expect(schedule).toHaveLength(14);
    expect(webhookFigures(schedule, 12)).toMatchObject({ sent: 14, duplicatesSent: 2, distinctEvents: 12, duplicateEffects: 0 });
    expect(
      duplicateSchedule(
        Array.from({ length: 400 }, (_, i) => `e${i}`),
        5,
      ),
    ).toHaveLength(499);
    expect(duplicateSchedule([], 5)).toEqual([]);
  });

  it('counts duplicates sent and effects beyond one per distinct event', () => {
    expect(webhookFigures(['evt_1', 'evt_2', 'evt_1', 'evt_3', 'evt_2'], 3)).toEqual({
      sent: 5,
      duplicatesSent: 2,
      distinctEvents: 3,
      effects: 3,
      duplicateEffects: 0,
    });
    expect(webhookFigures(['evt_1', 'evt_1'], 2).duplicateEffects).toBe(1);
    const hook = row(scenarioId.webhook(4), 'webhook ingestion, 20% duplicates', 4, 100, { webhooks: webhookFigures(['a', 'a', 'b'], 2) });
    expect(formatWebhookFigures([hook])[1]).toBe(
      '  webhook ingestion, 20% duplicates (c4)             3 events sent, 1 duplicates; 2 effects for 2 distinct events: 0 duplicate effects',
    );
    const results = { ...sampleResults(), scenarios: [hook] };
    expect(parseResults(serializeResults(results))).toEqual(results);
  });
});
