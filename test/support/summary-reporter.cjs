// One plain closing line ("N passed, N failed, N skipped") for CI systems that
// read the last line of a run; written at exit so it follows Jest's summary.
// Before it, the time each project took and the ten slowest files (issue 33:
// what the tiers cost, file by file, printed by every run). And how the
// processes fared: a long pause (a major GC of a large heap, a cold ts-jest
// compile) reaches every timer in a test, so the worst event-loop delay, GC
// pause and heap of the processes that ran the tests (process-health.mjs),
// and the worst loop delay of Jest's main process, which runs the emulator's
// serializing proxy. Then each transaction the proxy aborted (idle, superseded)
// with the files that were running at that moment: the log line of an abort is
// lost among thousands in CI's output, and its file is what one needs.
const { readFileSync, rmSync } = require('node:fs');
const { monitorEventLoopDelay } = require('node:perf_hooks');

class SummaryReporter {
  constructor() {
    this.files = [];
    this.mainLoopDelay = monitorEventLoopDelay({ resolution: 20 });
    this.mainLoopDelay.enable();
  }

  onTestResult(test, result) {
    const project = test.context.config.displayName?.name ?? test.context.config.displayName ?? '';
    const { start, end } = result.perfStats;
    this.files.push({ path: test.path.slice(test.context.config.rootDir.length + 1), project, seconds: (end - start) / 1000, start, end });
  }

  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests } = results;
    const byProject = new Map();
    for (const file of this.files) byProject.set(file.project, (byProject.get(file.project) ?? 0) + file.seconds);
    const slowest = [...this.files].sort((a, b) => b.seconds - a.seconds).slice(0, 10);
    const lines = [
      `Jest time by project: ${[...byProject].map(([project, seconds]) => `${project} ${seconds.toFixed(0)} s`).join(', ')}`,
      'Slowest files:',
      ...slowest.map((file) => `  ${file.seconds.toFixed(1).padStart(7)} s  ${file.path}`),
      ...this.health(),
      ...this.proxyAborts(),
    ];
    this.mainLoopDelay.disable();
    process.once('exit', () => {
      process.stderr.write(
        `\n${this.files.length > 1 ? `${lines.join('\n')}\n` : ''}Jest: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped\n`,
      );
    });
  }

  /** The emulator's proxy runs in this process (global-setup.mjs keeps its backend on globalThis). */
  proxyAborts() {
    const aborts = globalThis.__MONGO_BACKEND__?.proxyStats?.aborts ?? [];
    return aborts.map(({ at, reason }) => {
      const running = this.files.filter((file) => file.start <= at && at <= file.end).map((file) => file.path);
      return `Proxy aborted a transaction at ${new Date(at).toISOString()} (${reason}) during ${running.join(', ') || 'no test file'}`;
    });
  }

  health() {
    const file = process.env.TEST_HEALTH_FILE;
    let records = [];
    try {
      records = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
      rmSync(file, { force: true });
    } catch {
      // No global setup (a run without it), or no file finished: nothing to say.
    }
    const main = `Jest's main process (the emulator's proxy): longest event-loop delay ${(this.mainLoopDelay.max / 1e6).toFixed(0)} ms`;
    if (records.length === 0) return [main];
    const worst = (key) => records.reduce((a, b) => (b[key] > a[key] ? b : a));
    const [delay, gc, heap] = [worst('maxDelayMs'), worst('longestGcMs'), worst('heapMiB')];
    return [
      `Test processes (${new Set(records.map((r) => r.pid)).size}): longest event-loop delay ${delay.maxDelayMs} ms (${delay.path}), ` +
        `longest GC pause ${gc.longestGcMs} ms (${gc.path}), largest heap after a file ${heap.heapMiB} MiB (${heap.path})`,
      main,
    ];
  }
}

module.exports = SummaryReporter;
