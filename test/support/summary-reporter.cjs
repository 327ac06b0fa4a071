// One plain closing line ("N passed, N failed, N skipped") for CI systems that
// read the last line of a run; written at exit so it follows Jest's summary.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests, numFailedTests, numPendingTests } = results;
    process.once('exit', () => {
      process.stderr.write(`\nJest: ${numPassedTests} passed, ${numFailedTests} failed, ${numPendingTests} skipped\n`);
    });
  }
}

module.exports = SummaryReporter;
