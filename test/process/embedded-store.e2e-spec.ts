import { afterAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { killAllServices, startService } from '../support/service-process.js';

/** Process ids whose parent is `pid` (from /proc: no ps or pgrep needed). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing parenthesis.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * `npm start` without MONGODB_URI keeps its data in an embedded child
 * process. If that child dies the data is gone: the service says so and
 * exits, rather than answering 503 forever.
 */
describe('the embedded store of npm start', () => {
  afterAll(async () => killAllServices());

  it('exits 1 with a fatal line naming the cause when the embedded store dies', async () => {
    const service = await startService({ env: { MONGODB_URI: undefined, MONGO_BACKEND: 'emulator', LOG_LEVEL: 'info' } });
    const [emulator] = childrenOf(service.pid);
    expect(emulator).toBeGreaterThan(0);

    process.kill(emulator, 'SIGKILL');
    await expect(service.waitForExit(10_000)).resolves.toEqual({ code: 1, signal: null });
    expect(service.stdout()).toMatch(/"level":60.*The embedded MongoDB stopped on its own \(jongodb emulator exited \(SIGKILL\)\)/);
  });
});
