import type { LoadMeasurement } from './load.js';
import type { StoreCounts } from './report.js';
import type { RoundFigures } from './spread.js';

/** One measured window: the load's figures, the process's CPU and store commands per request. */
export type RoundMeasurement = LoadMeasurement & { cpuMsPerRequest: number | null; store?: StoreCounts | null; rounds?: RoundFigures[] };

/**
 * One row's figures out of its windows in several interleaved rounds (the
 * read rows take turns: replay, GET, floor, replay, GET, floor, ...), so a
 * burst of load from elsewhere on the machine falls on every row alike
 * instead of on whichever row it met. CPU and store commands per request are
 * totals over all rounds divided by all requests; p50 and p99 are the median
 * of the rounds' own (a percentile of percentiles: indicative only).
 */
export function mergeRounds(rounds: readonly RoundMeasurement[]): RoundMeasurement {
  if (rounds.length === 0) throw new Error('mergeRounds: no rounds');
  if (rounds.length === 1) return rounds[0];
  const requests = sum(rounds.map((round) => round.requests));
  const durationSeconds = sum(rounds.map((round) => round.durationSeconds));
  const statusCounts: Record<string, number> = {};
  for (const round of rounds) {
    for (const [status, count] of Object.entries(round.statusCounts)) statusCounts[status] = (statusCounts[status] ?? 0) + count;
  }
  const perRequest = (value: (round: RoundMeasurement) => number | null | undefined): number | null => {
    const values = rounds.map(value);
    if (requests === 0 || values.some((figure) => figure === null || figure === undefined)) return null;
    return sum(rounds.map((round, index) => values[index]! * round.requests)) / requests;
  };
  const counted = rounds.every((round) => round.store !== undefined);
  const store: StoreCounts | null | undefined = !counted
    ? undefined
    : rounds.some((round) => round.store === null)
      ? null
      : {
          commandsPerRequest: perRequest((round) => round.store!.commandsPerRequest)!,
          transactionsPerRequest: perRequest((round) => round.store!.transactionsPerRequest)!,
          abortsPerRequest: perRequest((round) => round.store!.abortsPerRequest)!,
          ...byNameOf(rounds, requests),
        };
  return {
    // Every round's own figures stay with the row: a ratio of two rows that took turns is judged round by round (bench/spread.ts).
    rounds: rounds.map((round) => ({
      requests: round.requests,
      durationSeconds: round.durationSeconds,
      reqPerSec: round.reqPerSec,
      cpuMsPerRequest: round.cpuMsPerRequest,
    })),
    durationSeconds,
    requests,
    reqPerSec: durationSeconds > 0 ? requests / durationSeconds : 0,
    p50Ms: median(rounds.map((round) => round.p50Ms)),
    p99Ms: median(rounds.map((round) => round.p99Ms)),
    errors: sum(rounds.map((round) => round.errors)),
    non2xx: sum(rounds.map((round) => round.non2xx)),
    statusCounts,
    cpuMsPerRequest: perRequest((round) => round.cpuMsPerRequest),
    ...(store === undefined ? {} : { store }),
  };
}

/** Commands by name over all rounds, per request (rounds weighed by their requests); absent unless every round has them. */
function byNameOf(rounds: readonly RoundMeasurement[], requests: number): { byName?: Record<string, number> } {
  if (requests === 0 || rounds.some((round) => !round.store?.byName)) return {};
  const byName: Record<string, number> = {};
  for (const round of rounds) {
    for (const [name, count] of Object.entries(round.store!.byName!))
      byName[name] = (byName[name] ?? 0) + (count * round.requests) / requests;
  }
  return { byName };
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
