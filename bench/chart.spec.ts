import { describe, expect, it } from '@jest/globals';
import { renderChart, renderHistoryChart } from './chart.js';
import { RESULTS_SCHEMA_VERSION, type BenchResults, type ScenarioResult } from './report.js';

const scenario = (id: string, reqPerSec: number, cpuMsPerRequest: number | null): ScenarioResult => ({
  id,
  title: `${id} <&>`,
  concurrency: 4,
  durationSeconds: 2,
  requests: reqPerSec * 2,
  reqPerSec,
  p50Ms: 1,
  p99Ms: 5,
  errors: 0,
  non2xx: 0,
  statusCounts: {},
  cpuMsPerRequest,
  check: null,
});

const results = (startedAt: string, scenarios: ScenarioResult[]): BenchResults => ({
  schemaVersion: RESULTS_SCHEMA_VERSION,
  mode: 'quick',
  startedAt,
  finishedAt: startedAt,
  machine: { cpus: 2, cpuModel: 'x', platform: 'linux', arch: 'x64', totalMemoryBytes: 1, node: 'v24' },
  packages: {},
  backend: { kind: 'emulator', description: 'jongodb' },
  settings: {
    durationSeconds: 2,
    warmupSeconds: 1,
    replayKeys: 20,
    duplicateRate: 0.05,
    paymentLatencyMs: 0,
    concurrencyLevels: [4],
    hotKeyConcurrency: 64,
  },
  scenarios,
  ratios: [],
});

describe('chart', () => {
  it('draws one bar per scenario and panel, escapes titles, and marks a missing value', () => {
    const svg = renderChart(results('2026-12-01T00:00:00.000Z', [scenario('create', 10, 20), scenario('floor', 12, null)]));
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('create &lt;&amp;&gt; (c4)');
    expect(svg.match(/<rect x=/g)).toHaveLength(5); // 2 req/s + 2 p99 + 1 CPU (the floor has none)
    expect(svg).toContain('>-</text>');
  });

  it('draws before (grey) and after (blue) bars when given two runs', () => {
    const before = results('2026-11-30T00:00:00.000Z', [scenario('replay', 1000, 1)]);
    const after = results('2026-12-01T00:00:00.000Z', [scenario('replay', 2000, 0.5), scenario('new-row', 5, 2)]);
    const svg = renderChart(after, before);
    expect(svg).toContain('(grey, before)');
    expect(svg.match(/fill="#9aa0a6"/g)).toHaveLength(3);
    expect(svg.match(/fill="#1a73e8"/g)).toHaveLength(6);
  });

  it('history: one bar per kept run for each CPU ratio to its floor, the newest blue, a dashed target line', () => {
    const ratio = (id: string, value: number | null, max?: number) => ({
      id,
      label: id,
      basis: 'cpu' as const,
      numerator: 'a',
      denominator: 'b',
      value,
      target: max === undefined ? null : { max },
    });
    const older = { ...results('2026-11-30T00:00:00.000Z', []), ratios: [ratio('get-vs-read-floor-cpu-c4', 1.9, 1.3)] };
    const newer = {
      ...results('2026-12-02T00:00:00.000Z', []),
      ratios: [ratio('get-vs-read-floor-cpu-c4', 1.2, 1.3), ratio('replay-vs-read-floor-cpu-c4', 2.5, 1.3)],
    };
    // Given newest first: drawn oldest first all the same.
    const svg = renderHistoryChart([newer, older]);
    expect(svg.indexOf('2026-11-30 00:00')).toBeLessThan(svg.indexOf('2026-12-02 00:00'));
    expect(svg).toContain('GET / read floor (target &lt;= 1.3)');
    expect(svg.match(/fill="#1a73e8"/g)).toHaveLength(2); // the newest run's GET and replay bars
    expect(svg.match(/fill="#9aa0a6"/g)).toHaveLength(1); // the older run has only the GET ratio
    expect(svg.match(/stroke-dasharray/g)).toHaveLength(2); // the GET and replay panels have targets
    expect(svg).toContain('>1.90</text>');
    expect(svg).toContain('>2.50</text>');
  });

  it('draws each CPU ratio with a target as its median, a min-max whisker, the target and the verdict (issue 47)', () => {
    const spread = { median: 1.4, min: 1.1, max: 1.9, rounds: [1.1, 1.4, 1.3, 1.9, 1.5] };
    const run = {
      ...results('2026-12-04T00:00:00.000Z', [scenario('replay', 100, 1)]),
      ratios: [
        {
          id: 'r',
          label: 'replay / floor',
          basis: 'cpu' as const,
          numerator: 'a',
          denominator: 'b',
          value: 1.4,
          target: { max: 1.3 },
          spread,
          verdict: 'unsettled' as const,
        },
        {
          id: 's',
          label: 'single',
          basis: 'cpu' as const,
          numerator: 'a',
          denominator: 'b',
          value: 0.9,
          target: { max: 1.3 },
          verdict: 'met' as const,
        },
        { id: 'n', label: 'no target', basis: 'cpu' as const, numerator: 'a', denominator: 'b', value: 0.9, target: null },
      ],
    };
    const svg = renderChart(run);
    expect(svg).toContain('>replay / floor</text>');
    expect(svg).toContain('1.40 (1.10-1.90, 5 rounds) unsettled');
    expect(svg).toContain('0.90 (1 window) met');
    expect(svg).not.toContain('>no target</text>');
    expect(svg.match(/stroke-dasharray="3 2"/g)).toHaveLength(2);
    // The whisker and its two end ticks.
    expect(svg.match(/stroke="#202124"/g)).toHaveLength(3);
  });
});
