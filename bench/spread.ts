/**
 * Ratios that hold (issue 47 item 3): a ratio of two rows measured in interleaved rounds (A B A B ...)
 * is the median of its per-round ratios, printed with their min-max, and judged against its target
 * only when the whole range is on one side of it: `met` or `missed`; a range that straddles the
 * target is `unsettled` - on a shared machine one round's burst of load elsewhere must not decide it.
 * Pure: tested by bench/spread.spec.ts.
 */

/** One measured window of a row that runs in rounds: what the results file keeps of each. */
export interface RoundFigures {
  requests: number;
  durationSeconds: number;
  reqPerSec: number;
  /** CPU ms per request of this window (idle left out); null without /proc. */
  cpuMsPerRequest: number | null;
}

/** The per-round ratios of one ratio, their median and range. */
export interface RatioSpread {
  median: number;
  min: number;
  max: number;
  /** Round i of the numerator over round i of the denominator, in round order. */
  rounds: number[];
}

export type Verdict = 'met' | 'missed' | 'unsettled';

/** At least this many rounds for a ratio to be judged by its spread (the floor). */
export const MIN_ROUNDS = 5;

/**
 * Round i over round i (the rows took turns, so round i of each saw the same moment of the machine).
 * Null unless both rows have the same number of rounds (at least one), each with a figure and a
 * denominator above zero.
 */
export function roundRatios(
  top: readonly RoundFigures[] | undefined,
  bottom: readonly RoundFigures[] | undefined,
  basis: 'cpu' | 'req/s',
): number[] | null {
  if (!top || !bottom || top.length === 0 || top.length !== bottom.length) return null;
  const figure = (round: RoundFigures) => (basis === 'cpu' ? round.cpuMsPerRequest : round.reqPerSec);
  const ratios: number[] = [];
  for (const [index, round] of top.entries()) {
    const above = figure(round);
    const below = figure(bottom[index]);
    if (above === null || below === null || below <= 0) return null;
    ratios.push(above / below);
  }
  return ratios;
}

export function spreadOf(values: readonly number[]): RatioSpread {
  if (values.length === 0) throw new Error('spreadOf: no values');
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), rounds: [...values] };
}

/**
 * `met` when every round is on the target's side, `missed` when every round is past it, `unsettled`
 * when the range straddles it. Null without a target.
 */
export function verdictOf(spread: Pick<RatioSpread, 'min' | 'max'>, target: { max?: number; min?: number } | null): Verdict | null {
  if (!target || (target.max === undefined && target.min === undefined)) return null;
  const within = (value: number) => (target.max === undefined || value <= target.max) && (target.min === undefined || value >= target.min);
  const low = within(spread.min);
  const high = within(spread.max);
  if (low && high) return 'met';
  // Both ends out of range on the same side (or on opposite sides of a two-sided target): nothing settles it as met.
  if (!low && !high && !straddles(spread, target)) return 'missed';
  return 'unsettled';
}

/** Whether some value within [min, max] meets the target. */
function straddles(spread: Pick<RatioSpread, 'min' | 'max'>, target: { max?: number; min?: number }): boolean {
  const from = Math.max(spread.min, target.min ?? -Infinity);
  const to = Math.min(spread.max, target.max ?? Infinity);
  return from <= to;
}

/** `1.23 (1.10-1.41, 5 rounds)`. */
export function formatSpread(spread: RatioSpread): string {
  return `${spread.median.toFixed(2)} (${spread.min.toFixed(2)}-${spread.max.toFixed(2)}, ${spread.rounds.length} rounds)`;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
