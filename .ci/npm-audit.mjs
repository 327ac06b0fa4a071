// Advisory scan of the production dependencies (npm audit against the
// registry the install used). Fails on high or critical advisories. Where the
// registry gives no answer (no audit endpoint - this project's mirror answers
// 405 -, offline, a proxy refusing the bulk POST) nothing was judged, and it
// says exactly that: "NOT JUDGED", never a pass. It still exits 0 there, so a
// machine that can only install can run CI - unless AUDIT_REQUIRED=1 (the
// hosted workflow, whose registry answers), where no answer fails the run.
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
  const why =
    report?.error?.summary ?? report?.message ?? run.error?.message ?? (run.stderr || 'no output').trim().split('\n').at(-1);
  console.log(`npm audit: NOT JUDGED - the registry gave no advisory answer (${why}); the dependencies' advisory status is unknown`);
  if (process.env.AUDIT_REQUIRED === '1') {
    console.log('npm audit: AUDIT_REQUIRED=1, so no answer fails the run');
    process.exit(2);
  }
  console.log('npm audit: exiting 0 so an offline run can go on; this is not a pass');
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
console.log('npm audit: judged - no high or critical advisory in production dependencies');
