import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (almost always 100 on Linux). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU a process has used so far, in ms; null when /proc cannot tell (not Linux, process gone). */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    return cpuMsFromStat(readFileSync(`/proc/${pid}/stat`, 'utf8'), TICKS_PER_SECOND);
  } catch {
    return null;
  }
}

/** Fields 14 and 15 of /proc/<pid>/stat (utime, stime), counted after the parenthesised command name. */
export function cpuMsFromStat(stat: string, ticksPerSecond: number): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/**
 * Starts measuring a process's CPU; `perRequest(n)` gives the CPU ms per
 * request since then, less what the process burns when idle (heartbeats,
 * pollers) over the same time: on a slow store few requests complete, and
 * that background would otherwise count as the requests' own cost.
 */
export function cpuMeter(pid: number | undefined, idleMsPerSecond = 0): { perRequest(requests: number): number | null } {
  const before = processCpuMs(pid);
  const started = Date.now();
  return {
    perRequest(requests) {
      const after = processCpuMs(pid);
      if (before === null || after === null || requests <= 0) return null;
      const background = (idleMsPerSecond * (Date.now() - started)) / 1000;
      return Math.max(0, after - before - background) / requests;
    },
  };
}

/** CPU ms per second a process uses while nothing is sent to it. */
export async function idleCpuRate(pid: number | undefined, sampleMs = 2000): Promise<number> {
  const before = processCpuMs(pid);
  await new Promise((resolve) => setTimeout(resolve, sampleMs));
  const after = processCpuMs(pid);
  return before === null || after === null ? 0 : ((after - before) * 1000) / sampleMs;
}
