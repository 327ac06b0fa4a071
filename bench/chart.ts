/**
 * The benchmark as a picture: one SVG (no browser, no dependency) with three
 * panels - req/s, p99 latency and service CPU per request - one bar per
 * scenario, on a log scale (the rows span 10 to 10,000 req/s). Given a second
 * results file, each scenario gets two bars: before (grey) and after (blue).
 *
 *   node dist/bench/chart.js <after.json> [--before <before.json>] [--out <file.svg>]
 *
 * run.ts writes `<results>.svg` next to every results file (`--compare <file>`
 * adds the before bars).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { parseResults, type BenchResults, type Ratio, type ScenarioResult } from './report.js';

interface Panel {
  title: string;
  value: (scenario: ScenarioResult) => number | null;
  format: (value: number) => string;
}

const PANELS: Panel[] = [
  { title: 'req/s (higher is better)', value: (s) => s.reqPerSec, format: (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(1)) },
  { title: 'p99 ms (lower is better)', value: (s) => s.p99Ms, format: (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(1)) },
  {
    title: 'service CPU ms / request (lower is better)',
    value: (s) => s.cpuMsPerRequest,
    format: (v) => (v >= 10 ? v.toFixed(1) : v.toFixed(2)),
  },
];

const LABEL_WIDTH = 300;
const PANEL_WIDTH = 300;
const GAP = 30;
const BAR = 9;
const COLORS = { before: '#9aa0a6', after: '#1a73e8' };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function renderChart(after: BenchResults, before?: BenchResults): string {
  const rows = after.scenarios.map((scenario) => ({
    label: `${scenario.title} (c${scenario.concurrency})`,
    after: scenario,
    before: before?.scenarios.find((candidate) => candidate.id === scenario.id),
  }));
  const rowHeight = before ? 2 * BAR + 8 : BAR + 8;
  const top = 70;
  const judged = after.ratios.filter((ratio) => ratio.basis === 'cpu' && ratio.target && ratio.value !== null);
  const ratiosTop = top + rows.length * rowHeight + 40;
  const height = ratiosTop + (judged.length > 0 ? 30 + judged.length * (BAR + 8) : 0) + 40;
  const width = LABEL_WIDTH + PANELS.length * (PANEL_WIDTH + GAP);
  const parts: string[] = [];
  const text = (x: number, y: number, content: string, attributes = '') =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escape(content)}</text>`);

  const heading = before
    ? `Benchmark ${before.startedAt} (grey, before) vs ${after.startedAt} (blue, after)`
    : `Benchmark ${after.startedAt} (${after.mode})`;
  text(8, 20, heading, 'font-size="14" font-weight="bold"');
  text(
    8,
    38,
    `${after.machine.cpus} CPUs, node ${after.machine.node}; backend: ${after.backend.kind} - ${after.backend.description}`,
    'font-size="11"',
  );
  rows.forEach((row, index) => text(LABEL_WIDTH - 8, top + index * rowHeight + BAR + 1, row.label, 'font-size="11" text-anchor="end"'));

  PANELS.forEach((panel, p) => {
    const x0 = LABEL_WIDTH + p * (PANEL_WIDTH + GAP);
    const values = rows.flatMap((row) => [panel.value(row.after), row.before ? panel.value(row.before) : null]).filter(isPositive);
    text(x0, top - 12, panel.title, 'font-size="12" font-weight="bold"');
    parts.push(`<line x1="${x0}" y1="${top - 4}" x2="${x0}" y2="${top + rows.length * rowHeight}" stroke="#555"/>`);
    if (values.length === 0) return;
    const scale = logScale(Math.min(...values), Math.max(...values), PANEL_WIDTH - 60);
    rows.forEach((row, index) => {
      const bars = before
        ? ([
            ['before', row.before],
            ['after', row.after],
          ] as const)
        : ([['after', row.after]] as const);
      bars.forEach(([which, scenario], b) => {
        const value = scenario ? panel.value(scenario) : null;
        const y = top + index * rowHeight + b * (BAR + 1);
        if (!isPositive(value)) {
          text(x0 + 4, y + BAR - 1, '-', 'font-size="10" fill="#777"');
          return;
        }
        const length = scale(value);
        parts.push(`<rect x="${x0}" y="${y}" width="${length.toFixed(1)}" height="${BAR}" fill="${COLORS[which]}"/>`);
        text(x0 + length + 4, y + BAR - 1, panel.format(value), 'font-size="10"');
      });
    });
  });
  parts.push(...ratioPanel(judged, ratiosTop));
  text(
    8,
    height - 14,
    'Log scale per panel. ' + (after.backend.kind === 'emulator' ? 'EMULATOR backend: compare runs of one machine only.' : ''),
    'font-size="10" fill="#555"',
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

const VERDICT_COLORS = { met: '#188038', missed: '#d93025', unsettled: '#e37400' } as const;

/**
 * The CPU ratios with a target (issue 47 item 3): a bar at the median, a whisker over the rounds'
 * min-max, a dashed tick at the target, and the verdict - met or missed only when the whole range is
 * on one side of the target, unsettled when it straddles it. Linear scale from 0.
 */
function ratioPanel(ratios: readonly Ratio[], y0: number): string[] {
  if (ratios.length === 0) return [];
  const parts: string[] = [];
  const text = (x: number, y: number, content: string, attributes = '') =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escape(content)}</text>`);
  const ends = ratios.flatMap((ratio) => [ratio.value ?? 0, ratio.spread?.max ?? 0, ratio.target?.max ?? ratio.target?.min ?? 0]);
  const max = Math.max(1, ...ends) * 1.1;
  const x = (value: number) => LABEL_WIDTH + (value / max) * (2 * PANEL_WIDTH);
  text(
    LABEL_WIDTH,
    y0 + 12,
    'CPU ratios: median of the interleaved rounds, whisker = min-max, dashed = target',
    'font-size="12" font-weight="bold"',
  );
  ratios.forEach((ratio, index) => {
    const y = y0 + 30 + index * (BAR + 8);
    const verdict = ratio.verdict ?? null;
    const color = verdict ? VERDICT_COLORS[verdict] : COLORS.after;
    text(LABEL_WIDTH - 8, y + BAR - 1, ratio.label, 'font-size="11" text-anchor="end"');
    parts.push(
      `<rect x="${LABEL_WIDTH}" y="${y}" width="${(x(ratio.value!) - LABEL_WIDTH).toFixed(1)}" height="${BAR}" fill="${color}" fill-opacity="0.6"/>`,
    );
    if (ratio.spread) {
      const middle = (y + BAR / 2).toFixed(1);
      parts.push(
        `<line x1="${x(ratio.spread.min).toFixed(1)}" y1="${middle}" x2="${x(ratio.spread.max).toFixed(1)}" y2="${middle}" stroke="#202124" stroke-width="1.5"/>`,
      );
      for (const end of [ratio.spread.min, ratio.spread.max]) {
        parts.push(`<line x1="${x(end).toFixed(1)}" y1="${y}" x2="${x(end).toFixed(1)}" y2="${y + BAR}" stroke="#202124"/>`);
      }
    }
    const target = ratio.target?.max ?? ratio.target?.min;
    if (target !== undefined) {
      parts.push(
        `<line x1="${x(target).toFixed(1)}" y1="${y - 2}" x2="${x(target).toFixed(1)}" y2="${y + BAR + 2}" stroke="#d93025" stroke-dasharray="3 2"/>`,
      );
    }
    const range = ratio.spread
      ? ` (${ratio.spread.min.toFixed(2)}-${ratio.spread.max.toFixed(2)}, ${ratio.spread.rounds.length} rounds)`
      : ' (1 window)';
    text(
      x(Math.max(ratio.value!, ratio.spread?.max ?? 0, target ?? 0)) + 6,
      y + BAR - 1,
      `${ratio.value!.toFixed(2)}${range} ${verdict ?? ''}`,
      'font-size="10"',
    );
  });
  return parts;
}

const isPositive = (value: number | null | undefined): value is number => typeof value === 'number' && Number.isFinite(value) && value > 0;

/** Bar length for a value: log10 from a decade below the smallest to the largest; never shorter than 2 px. */
function logScale(min: number, max: number, span: number): (value: number) => number {
  const low = Math.floor(Math.log10(min)) - (min === max ? 1 : 0);
  const high = Math.max(Math.log10(max), low + 1);
  return (value) => Math.max(2, ((Math.log10(value) - low) / (high - low)) * span);
}

/** The CPU ratios a person watches across runs: each path against its floor, with its target. */
const HISTORY_RATIOS: { prefix: string; label: string }[] = [
  { prefix: 'get-vs-read-floor-cpu-c', label: 'GET / read floor' },
  { prefix: 'replay-vs-read-floor-cpu-c', label: 'replay / read floor' },
  { prefix: 'replay-vs-get-cpu-c', label: 'replay / GET' },
  { prefix: 'layer-on-vs-off-cpu-c', label: 'create, layer on / off' },
  { prefix: 'replay-redis-vs-read-floor-cpu-c', label: 'replay, Redis / read floor' },
  { prefix: 'ours-pkg-vs-peer-redis-replay-cpu-c', label: 'twin / peer, Redis replay' },
  { prefix: 'ours-pkg-vs-peer-redis-first-cpu-c', label: 'twin / peer, Redis first request' },
];

/**
 * Every kept run side by side (issue 39, item 5): one panel per path's CPU
 * ratio to its floor, one bar per results file (oldest first, the newest
 * blue), a dashed line at the target, so a regression stands out at a
 * glance. Linear scale from 0; a run without the row shows a dash. Runs
 * are labelled by date and backend, since emulator runs on a shared
 * machine compare only with each other.
 */
export function renderHistoryChart(runs: BenchResults[]): string {
  const sorted = [...runs].sort((a, b) => a.startedAt.localeCompare(b.startedAt));
  const panels = HISTORY_RATIOS.map((wanted) => ({
    ...wanted,
    values: sorted.map((run) => run.ratios.find((ratio) => ratio.basis === 'cpu' && ratio.id.startsWith(wanted.prefix)) ?? null),
  }));
  const rowHeight = BAR + 4;
  const panelHeight = 24 + sorted.length * rowHeight + 14;
  const top = 56;
  const width = LABEL_WIDTH + PANEL_WIDTH + 80;
  const height = top + panels.length * panelHeight + 30;
  const parts: string[] = [];
  const text = (x: number, y: number, content: string, attributes = '') =>
    parts.push(`<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escape(content)}</text>`);
  text(
    8,
    20,
    `Service CPU per request against its floor, ${sorted.length} kept runs (bench/results/)`,
    'font-size="14" font-weight="bold"',
  );
  text(8, 38, 'One bar per run, oldest first, newest in blue; dashed line: the target (at or left of it is met).', 'font-size="11"');
  panels.forEach((panel, p) => {
    const y0 = top + p * panelHeight;
    const target = panel.values.find((ratio) => ratio?.target?.max !== undefined)?.target?.max;
    const measured = panel.values.flatMap((ratio) => [ratio?.value, ratio?.spread?.max]).filter(isPositive);
    const max = Math.max(1, target ?? 0, ...measured) * 1.1;
    const x = (value: number) => LABEL_WIDTH + (value / max) * PANEL_WIDTH;
    text(8, y0 + 14, `${panel.label}${target !== undefined ? ` (target <= ${target})` : ''}`, 'font-size="12" font-weight="bold"');
    const barsTop = y0 + 24;
    parts.push(
      `<line x1="${LABEL_WIDTH}" y1="${barsTop - 2}" x2="${LABEL_WIDTH}" y2="${barsTop + sorted.length * rowHeight}" stroke="#555"/>`,
    );
    sorted.forEach((run, index) => {
      const y = barsTop + index * rowHeight;
      text(
        LABEL_WIDTH - 8,
        y + BAR - 1,
        `${run.startedAt.slice(0, 16).replace('T', ' ')} ${run.backend.kind}`,
        'font-size="10" text-anchor="end"',
      );
      const value = panel.values[index]?.value;
      if (!isPositive(value)) {
        text(LABEL_WIDTH + 4, y + BAR - 1, '-', 'font-size="10" fill="#777"');
        return;
      }
      const fill = index === sorted.length - 1 ? COLORS.after : COLORS.before;
      parts.push(`<rect x="${LABEL_WIDTH}" y="${y}" width="${(x(value) - LABEL_WIDTH).toFixed(1)}" height="${BAR}" fill="${fill}"/>`);
      // A run that measured the ratio in rounds: its min-max as a whisker (issue 47).
      const spread = panel.values[index]?.spread;
      if (spread) {
        const middle = (y + BAR / 2).toFixed(1);
        parts.push(
          `<line x1="${x(spread.min).toFixed(1)}" y1="${middle}" x2="${x(spread.max).toFixed(1)}" y2="${middle}" stroke="#202124"/>`,
        );
      }
      text(
        x(Math.max(value, spread?.max ?? 0)) + 4,
        y + BAR - 1,
        spread ? `${value.toFixed(2)} (${spread.min.toFixed(2)}-${spread.max.toFixed(2)})` : value.toFixed(2),
        'font-size="10"',
      );
    });
    if (target !== undefined) {
      parts.push(
        `<line x1="${x(target).toFixed(1)}" y1="${barsTop - 4}" x2="${x(target).toFixed(1)}" y2="${barsTop + sorted.length * rowHeight}" stroke="#d93025" stroke-dasharray="4 3"/>`,
      );
    }
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { before: { type: 'string' }, out: { type: 'string' } } });
  if (positionals.length !== 1) throw new Error('usage: node dist/bench/chart.js <after.json> [--before <before.json>] [--out <file.svg>]');
  const after = parseResults(readFileSync(positionals[0], 'utf8'));
  const before = values.before ? parseResults(readFileSync(values.before, 'utf8')) : undefined;
  const out = values.out ?? positionals[0].replace(/\.json$/, '') + (before ? '.compare.svg' : '.svg');
  writeFileSync(out, renderChart(after, before));
  console.log(`Chart written to ${out}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
