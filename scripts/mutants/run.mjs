#!/usr/bin/env node
// Mutation testing as a habit (issues 26 and 33): applies each kept mutant (mutants.mjs) to a scratch
// copy of the tree and runs the tests that must kill it, then prints mutant -> killed by. A kill counts
// only when the test named for the rule fails on an assertion (a Jest matcher): a suite that does not
// start, a timeout or a TypeError is "failed otherwise", never a kill. Exit code 1 if any mutant is not
// killed by each of its named tests, a patch no longer applies, or a mutant does not compile.
//
// Mutants cover the create path (the package's protocol), the money after it (refunds, capture and
// void, the ledger), the webhooks (verifier, inbox), settlement reconciliation and the package's
// fingerprint. A killer marked `build: true` runs the built service or CLI (dist/): its mutant's copy is
// built (npm run build, with its own workspace packages linked in node_modules), never the unmutated dist.
//
//   npm run test:mutants                 every mutant, every killer (model-based at its default budget)
//   npm run test:mutants:fast            the CI subset: fast mutants, their named tests only (< 5 min)
//   node scripts/mutants/run.mjs --no-model      every mutant, only the tests named for its rule
//   node scripts/mutants/run.mjs --only fencing-removed,reaper-charges
//   node scripts/mutants/run.mjs --check         only whether every patch still applies (after a merge)
//
// The control (every killer on the unmutated copy) must pass: when one fails, its Jest report is kept
// (the path is printed) with the seed and path of a failing model run and the command that replays it.
//
// Why patches and not StrykerJS: see README, "Tests" (Stryker's own mutants are operator-level; these
// are the protocol's and the money's rules, each with its test).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MUTANTS } from './mutants.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const fast = args.includes('--fast');
// --no-model: every mutant, but only the tests named for its rule (the model-based run is the slow part).
const noModel = fast || args.includes('--no-model');
const only =
  args.find((arg) => arg.startsWith('--only'))?.split('=')[1] ?? (args.includes('--only') ? args[args.indexOf('--only') + 1] : null);
const selected = MUTANTS.filter((m) => (only ? only.split(',').includes(m.id) : !fast || m.fast));
const scratchRoot = join(process.env.MUTANTS_DIR ?? tmpdir(), `mutants-${process.pid}`);

/** `search` with every whitespace run matching any whitespace run: robust to re-formatting. */
function pattern(search) {
  const escaped = search
    .trim()
    .split(/\s+/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('\\s+');
  return new RegExp(escaped, 'g');
}

/**
 * Applies every patch of a mutant to `dir`; throws naming the patch that does not apply exactly once. A patch
 * may list `alternatives` ({search, replace} each) for code that is being rewritten: the first that matches
 * exactly once is used.
 */
export function applyMutant(mutant, dir) {
  for (const patch of mutant.patches) {
    const path = join(dir, patch.file);
    const text = readFileSync(path, 'utf8');
    const options = patch.alternatives ?? [patch];
    const chosen = options.find((option) => (text.match(pattern(option.search)) ?? []).length === 1);
    if (!chosen) throw new Error(`${mutant.id}: "${options[0].search.slice(0, 80)}" not found exactly once in ${patch.file}`);
    writeFileSync(
      path,
      text.replace(pattern(chosen.search), () => chosen.replace),
    );
  }
}

/** The working tree (tracked and new files) as it was when the run started: every mutant starts from this snapshot. */
function snapshot() {
  const dir = join(scratchRoot, 'snapshot');
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const file of files) {
    // Deleted files, and links or directories (node_modules, dist are shared below): only plain files are copied.
    if (!existsSync(join(root, file)) || !lstatSync(join(root, file)).isFile()) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(root, file), join(dir, file));
  }
  return dir;
}
const tree = snapshot();

/**
 * A scratch copy of the snapshot. node_modules is shared entry by entry, except the workspace packages
 * (@idempotent-orders/*), which point at the copy's own packages/ (so a built copy runs its own). dist/
 * (and each package's) is the unmutated build, linked; a mutant whose killers run dist/ replaces the
 * links with its own build.
 */
function scratchCopy(id) {
  const dir = join(scratchRoot, id);
  cpSync(tree, dir, { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(root, 'node_modules'))) {
    if (entry === '@idempotent-orders') continue;
    symlinkSync(join(root, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  mkdirSync(join(dir, 'node_modules', '@idempotent-orders'));
  for (const name of readdirSync(join(root, 'node_modules', '@idempotent-orders'))) {
    symlinkSync(join(dir, 'packages', name), join(dir, 'node_modules', '@idempotent-orders', name));
  }
  symlinkSync(join(root, 'dist'), join(dir, 'dist'));
  for (const name of readdirSync(join(root, 'packages'))) {
    if (existsSync(join(root, 'packages', name, 'dist')))
      symlinkSync(join(root, 'packages', name, 'dist'), join(dir, 'packages', name, 'dist'));
  }
  return { dir };
}

/**
 * A failure message that is an assertion - a Jest matcher's report, supertest's status check, Node's
 * assert, or a model-based property that failed on one of its checks (fast-check's "Property failed",
 * whose inner error is the model's judgement) - not a crash, a timeout or a suite that did not start.
 */
const ASSERTION = /expect\(|\bexpected \d{3} "[^"]*", got \d{3}|AssertionError|Property failed after \d+ tests/;
/** A property that "failed" on a crash of the code under test is no kill: its inner error names the crash. */
const CRASH = /Got error: (TypeError|ReferenceError|SyntaxError|RangeError)\b/;
const isAssertion = (messages) => ASSERTION.test(messages) && !CRASH.test(messages);
const keepDir = join(process.env.MUTANTS_KEEP ?? tmpdir(), `mutants-failed-controls-${process.pid}`);

/** Runs one killer in `dir`: 'killed' (a test failed), 'survived' (all passed), or 'broken' (the suite did not run). */
function runKiller(dir, killer) {
  const out = join(dir, `.jest-${Math.random().toString(36).slice(2)}.json`);
  const started = Date.now();
  // --forceExit: a mutant can leave a request hanging (a held provider call nobody releases), which would keep Jest alive.
  const jest = [
    '--experimental-vm-modules',
    'node_modules/jest/bin/jest.js',
    '--runInBand',
    '--forceExit',
    '--json',
    `--outputFile=${out}`,
    killer.file,
    '-t',
    killer.name,
  ];
  const run = spawnSync(process.execPath, jest, {
    cwd: dir,
    env: { ...process.env, ...(killer.env ?? {}) },
    stdio: ['ignore', 'ignore', 'ignore'],
    timeout: 20 * 60_000,
    killSignal: 'SIGKILL',
  });
  if (run.error)
    return { verdict: 'broken', seconds: ((Date.now() - started) / 1000).toFixed(0), detail: `jest did not finish: ${run.error.message}` };
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (!existsSync(out)) return { verdict: 'broken', seconds, detail: 'no jest report' };
  const report = JSON.parse(readFileSync(out, 'utf8'));
  const expected = new RegExp(killer.name);
  const failed = report.testResults.flatMap((suite) =>
    suite.assertionResults.filter((test) => test.status === 'failed').map((test) => ({ ...test, file: suite.name })),
  );
  const named = failed.filter((test) => expected.test(test.fullName) && isAssertion(test.failureMessages.join('\n')));
  if (named.length > 0) return { verdict: 'killed', seconds, detail: named[0].title, report: out };
  if (failed.length > 0)
    return {
      verdict: 'failed otherwise',
      seconds,
      detail: `${failed[0].title}: ${(failed[0].failureMessages[0] ?? '').split('\n').find(Boolean)}`,
      report: out,
    };
  if (report.numRuntimeErrorTestSuites > 0 || report.testResults.some((suite) => suite.status === 'failed'))
    return {
      verdict: 'broken',
      seconds,
      detail: (report.testResults[0]?.message ?? '').split('\n').find(Boolean) ?? 'suite failed',
      report: out,
    };
  if (report.numPassedTests === 0) return { verdict: 'broken', seconds, detail: `no test matched "${killer.name}"` };
  return { verdict: 'survived', seconds, detail: `${report.numPassedTests} passed` };
}

/** A control that failed: its report kept, and the seed and path of a failing model run with the command that replays it. */
function keepFailedControl(killer, result) {
  if (!result.report || !existsSync(result.report)) return;
  mkdirSync(keepDir, { recursive: true });
  const kept = join(keepDir, `${killer.file.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}.json`);
  cpSync(result.report, kept);
  process.stdout.write(`baseline: its Jest report is kept in ${kept}\n`);
  const found = readFileSync(kept, 'utf8').match(/seed: (-?\d+), path: \\?"([^"\\]+)\\?"/);
  if (found)
    process.stdout.write(
      `baseline: replay it with MODEL_SEED=${found[1]} MODEL_PATH='${found[2]}' node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand ${killer.file} -t '${killer.name}'\n`,
    );
}

if (args.includes('--check')) {
  // Only whether every patch still applies (after a merge): no test runs.
  let failed = 0;
  for (const mutant of selected) {
    const { dir } = scratchCopy(mutant.id);
    try {
      applyMutant(mutant, dir);
      process.stdout.write(`${mutant.id}: applies\n`);
    } catch (error) {
      failed++;
      process.stdout.write(`${error.message}\n`);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  rmSync(scratchRoot, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
}

const rows = [];
let bad = false;
const killersOf = (mutant) =>
  noModel ? mutant.killers.filter((killer) => !killer.file.startsWith('test/model/model-based')) : mutant.killers;
const needsBuild = (killers) => killers.some((killer) => killer.build);
const keyOf = (killer) => `${killer.file} -t "${killer.name}"`;

// Control: every killer must pass on the tree without a mutant, or its "kill" would prove nothing.
const baseline = new Map();
{
  const { dir } = scratchCopy('baseline');
  for (const killer of selected.flatMap(killersOf)) {
    if (baseline.has(keyOf(killer))) continue;
    const result = runKiller(dir, killer);
    baseline.set(keyOf(killer), result);
    process.stdout.write(
      `baseline: ${result.verdict === 'survived' ? 'passes' : `FAILS (${result.detail})`} ${keyOf(killer)} (${result.seconds} s)\n`,
    );
    if (result.verdict !== 'survived') {
      bad = true;
      keepFailedControl(killer, result);
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

for (const mutant of selected) {
  const killers = killersOf(mutant);
  // The patch is applied before the build: a killer that runs dist/ runs the mutant.
  const { dir } = scratchCopy(mutant.id);
  try {
    applyMutant(mutant, dir);
  } catch (error) {
    rows.push({ mutant: mutant.id, killer: '-', verdict: 'DOES NOT APPLY', detail: error.message, seconds: 0 });
    bad = true;
    rmSync(dir, { recursive: true, force: true });
    continue;
  }
  let buildError;
  if (needsBuild(killers)) {
    rmSync(join(dir, 'dist'), { force: true });
    for (const name of readdirSync(join(dir, 'packages'))) rmSync(join(dir, 'packages', name, 'dist'), { force: true });
    const built = spawnSync('npm', ['run', 'build'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (built.status !== 0) buildError = `${built.stdout}\n${built.stderr}`.trim().split('\n').slice(-3).join(' ');
  }
  // Every killer named for the rule must kill it (the model-based test, where listed, too).
  let killedByAll = true;
  for (const killer of killers) {
    const control = baseline.get(keyOf(killer));
    const result = buildError
      ? { verdict: 'DOES NOT BUILD', seconds: 0, detail: buildError }
      : control.verdict === 'survived'
        ? runKiller(dir, killer)
        : { verdict: 'fails unmutated', seconds: 0, detail: control.detail };
    rows.push({ mutant: mutant.id, killer: keyOf(killer), ...result });
    process.stdout.write(`${mutant.id}: ${result.verdict} by ${killer.file} (${result.seconds} s) ${result.detail}\n`);
    if (result.verdict !== 'killed') killedByAll = false;
  }
  if (!killedByAll) bad = true;
  rmSync(dir, { recursive: true, force: true });
}
rmSync(scratchRoot, { recursive: true, force: true });

const table = [
  '| mutant | test | verdict | s | first failing test / detail |',
  '| --- | --- | --- | --- | --- |',
  ...rows.map(
    (row) =>
      `| ${row.mutant} | ${row.killer} | ${row.verdict} | ${row.seconds} | ${String(row.detail).replace(/\|/g, '/').slice(0, 140)} |`,
  ),
].join('\n');
process.stdout.write(`\n${table}\n`);
if (process.env.MUTANTS_REPORT) writeFileSync(process.env.MUTANTS_REPORT, `${table}\n`);
const survivors = selected.filter((m) => rows.filter((row) => row.mutant === m.id).some((row) => row.verdict !== 'killed'));
process.stdout.write(
  survivors.length
    ? `\nNOT KILLED by every named test (survived, failed otherwise, or not run): ${survivors.map((m) => m.id).join(', ')}\n`
    : `\nall ${selected.length} mutants killed, each by every test named for its rule\n`,
);
process.exit(bad ? 1 : 0);
