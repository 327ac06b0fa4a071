// One plain closing line ("N passed, N failed, N skipped") for CI systems that
// read the last line of a run; written at exit so it follows Jest's summary.
// Before it, the time each project took and the ten slowest files (issue 33:
// what the tiers cost, file by file, printed by every run).
class SummaryReporter {
  constructor() {
    this.files = [];
  }

  onTestResult(test, result) {
    const seconds = (result.perfStats.end - result.perfStats.start) / 1000;
    const project = test.context.config.displayName?.name ?? test.context.config.displayName ?? '';
    this.files.push({ path: test.path.slice(test.context.config.rootDir.length + 1), project, seconds });
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
    ];
    process.once('exit', () => {
      process.stderr.write(
        `\n${this.files.length > 1 ? `${lines.join('\n')}\n` : ''}Jest: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped\n`,
      );
    });
  }
}

module.exports = SummaryReporter;
