/**
 * Reads a V8 CPU profile (`node --cpu-prof`, a `.cpuprofile` JSON file) and
 * ranks functions by self time: where the service itself spends its CPU.
 * Written here because the format is small and stable and the one npm tool
 * for it renders flame graphs, not a table a README can quote.
 */
export interface CpuProfile {
  /** Microseconds on the monotonic clock, the one `process.hrtime` reads on Linux: comparable across processes. */
  startTime?: number;
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

export interface Frame {
  name: string;
  /** Self time in ms, and its share of all sampled time. */
  selfMs: number;
  share: number;
}

/**
 * The `count` functions with the most self time, leaving out the first
 * `skipMs` of the profile (the boot: module loading is not a per-request
 * cost) and idle time; shares are of the busy time that is left.
 */
export function topFrames(profile: CpuProfile, count: number, root = process.cwd(), skipMs = 0): Frame[] {
  return rank(profile, count, root, (elapsedUs) => elapsedUs >= skipMs * 1000);
}

/** A measured window, in monotonic microseconds (`process.hrtime.bigint() / 1000n`): the bench's own clock and V8's. */
export interface ProfileWindow {
  fromUs: number;
  toUs: number;
}

/**
 * The same ranking over the samples taken inside the windows only: one
 * scenario's requests (a GET row, a replay row) out of a profile of the
 * whole run, so the frames are that path's and not those of the rows around it.
 */
export function topFramesIn(profile: CpuProfile, count: number, root: string, windows: ProfileWindow[]): Frame[] {
  return rank(profile, count, root, inWindows(profile, windows));
}

/** Whether a sample, by its time since the profile's start, falls inside one of the windows. */
function inWindows(profile: CpuProfile, windows: ProfileWindow[]): (elapsedUs: number) => boolean {
  const start = profile.startTime ?? 0;
  return (elapsedUs) => windows.some((w) => start + elapsedUs >= w.fromUs && start + elapsedUs < w.toUs);
}

/**
 * The same samples grouped by who owns the code: an npm package (`~fastify`,
 * `~@nestjs/core`), a folder of ours (`dist/src/auth`), the idempotency
 * package, a Node module (`node:internal/crypto`), or a native frame by name
 * (`writeBuffer`, `(garbage collector)`). Self time alone scatters a
 * framework's cost over hundreds of small functions; summed by owner it says
 * how much of a request is the router, the driver, the logger.
 */
export function topOwnersIn(profile: CpuProfile, count: number, root: string, windows: ProfileWindow[]): Frame[] {
  return rank(profile, count, root, inWindows(profile, windows), ownerName);
}

function rank(
  profile: CpuProfile,
  count: number,
  root: string,
  counted: (elapsedUs: number) => boolean,
  name: (frame: CpuProfile['nodes'][number]['callFrame'], root: string) => string = frameName,
): Frame[] {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  let elapsedUs = 0;
  profile.samples.forEach((nodeId, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    elapsedUs += delta;
    const frame = byNode.get(nodeId)?.callFrame;
    if (!frame || !counted(elapsedUs) || frame.functionName === '(idle)') return;
    totalUs += delta;
    const key = name(frame, root);
    selfUs.set(key, (selfUs.get(key) ?? 0) + delta);
  });
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, selfMs: us / 1000, share: totalUs > 0 ? us / totalUs : 0 }));
}

function frameName(frame: CpuProfile['nodes'][number]['callFrame'], root: string): string {
  const fn = frame.functionName || '(anonymous)';
  if (!frame.url) return fn;
  const path = frame.url
    .replace(/^file:\/\//, '')
    .replace(`${root}/`, '')
    .replace(/^.*node_modules\//, '~');
  return `${fn} ${path}:${frame.lineNumber + 1}`;
}

function ownerName(frame: CpuProfile['nodes'][number]['callFrame'], root: string): string {
  if (!frame.url) return frame.functionName || '(anonymous)';
  const path = frame.url.replace(/^file:\/\//, '').replace(`${root}/`, '');
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
  if (module) return `~${module[1]}`;
  if (path.startsWith('node:')) return path.split('/').slice(0, 2).join('/');
  const ours = /^((?:dist\/)?(?:packages\/[^/]+|src\/[^/]+|bench))\//.exec(path);
  return ours ? ours[1] : path;
}

export function formatFrames(frames: Frame[]): string {
  return frames
    .map((frame) => `  ${(frame.share * 100).toFixed(1).padStart(5)}%  ${frame.selfMs.toFixed(0).padStart(7)} ms  ${frame.name}`)
    .join('\n');
}
