// Advisory scan of the production dependencies (npm audit against the
// registry the install used). Fails on high or critical advisories; where the
// registry gives no answer (no audit endpoint, offline mirror, proxy refusing
// the bulk POST) it says so and passes: an unanswered question is not a
// finding, and it must not block a machine that can only install.
import { spawnSync } from 'node:child_process';

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', timeout: 120_000 });
let report;
try {
  report = JSON.parse(run.stdout || 'null');
} catch {
  report = null;
}
const counts = report?.metadata?.vulnerabilities;
if (!counts) {
  const why = report?.message ?? run.error?.message ?? (run.stderr || 'no output').trim().split('\n').at(-1);
  console.log(`npm audit: no answer from the registry (${why}); advisory check skipped`);
  process.exit(0);
}
const serious = (counts.high ?? 0) + (counts.critical ?? 0);
console.log(`npm audit (production dependencies): ${JSON.stringify(counts)}`);
if (serious > 0) {
  for (const [name, finding] of Object.entries(report.vulnerabilities ?? {})) {
    if (finding.severity === 'high' || finding.severity === 'critical') console.log(`  ${finding.severity}: ${name} ${finding.range}`);
  }
  console.log('npm audit: high or critical advisories in production dependencies (npm audit --omit=dev for details)');
  process.exit(1);
}
