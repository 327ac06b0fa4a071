#!/usr/bin/env node
// Mutation testing as a habit (issue 26 item 5): applies each kept mutant
// (mutants.mjs) to a scratch copy of the tree and runs the tests that must
// kill it, then prints mutant -> killed by. Exit code 1 if any mutant
// survives, a patch no longer applies, or a mutant does not compile.
//
//   npm run test:mutants                 every mutant, every killer (model-based at its default budget)
//   npm run test:mutants:fast            the CI subset: fast mutants, their named tests only
//   node scripts/mutants/run.mjs --no-model      every mutant, only the tests named for its rule
//   node scripts/mutants/run.mjs --only fencing-removed,reaper-charges
//   node scripts/mutants/run.mjs --check         only whether every patch still applies (after a merge)
//
// Why patches and not StrykerJS: see README, "Tests" (Stryker's own mutants
// are operator-level; these are the protocol's rules, each with its test).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MUTANTS } from './mutants.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const fast = args.includes('--fast');
// --no-model: every mutant, but only the tests named for its rule (the model-based run is the slow part).
const noModel = fast || args.includes('--no-model');
const only = args.find((arg) => arg.startsWith('--only'))?.split('=')[1] ?? (args.includes('--only') ? args[args.indexOf('--only') + 1] : null);
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
    writeFileSync(path, text.replace(pattern(chosen.search), () => chosen.replace));
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

/** A scratch copy of the snapshot, sharing node_modules and the built dist/. */
function scratchCopy(id) {
  const dir = join(scratchRoot, id);
  cpSync(tree, dir, { recursive: true });
  // node_modules is shared; dist/ too: the in-process tests run src/ through ts-jest (mutated), and the
  // global setup only takes the MongoDB backend resolver from dist/ (not mutated by any patch here).
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  symlinkSync(join(root, 'dist'), join(dir, 'dist'));
  return dir;
}

/** Runs one killer in `dir`: 'killed' (a test failed), 'survived' (all passed), or 'broken' (the suite did not run). */
function runKiller(dir, killer) {
  const out = join(dir, `.jest-${Math.random().toString(36).slice(2)}.json`);
  const started = Date.now();
  // --forceExit: a mutant can leave a request hanging (a held provider call nobody releases), which would keep Jest alive.
  const jest = ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', '--runInBand', '--forceExit', '--json', `--outputFile=${out}`, killer.file, '-t', killer.name];
  const run = spawnSync(process.execPath, jest, {
    cwd: dir,
    env: { ...process.env, ...(killer.env ?? {}) },
    stdio: ['ignore', 'ignore', 'ignore'],
    timeout: 20 * 60_000,
    killSignal: 'SIGKILL',
  });
  if (run.error) return { verdict: 'broken', seconds: ((Date.now() - started) / 1000).toFixed(0), detail: `jest did not finish: ${run.error.message}` };
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (!existsSync(out)) return { verdict: 'broken', seconds, detail: 'no jest report' };
  const report = JSON.parse(readFileSync(out, 'utf8'));
  const failed = report.testResults.flatMap((suite) =>
    suite.assertionResults.filter((test) => test.status === 'failed').map((test) => test.title),
  );
  if (failed.length > 0) return { verdict: 'killed', seconds, detail: failed[0] };
  if (report.numRuntimeErrorTestSuites > 0 || report.testResults.some((suite) => suite.status === 'failed'))
    return { verdict: 'broken', seconds, detail: (report.testResults[0]?.message ?? '').split('\n').find(Boolean) ?? 'suite failed' };
  if (report.numPassedTests === 0) return { verdict: 'broken', seconds, detail: `no test matched "${killer.name}"` };
  return { verdict: 'survived', seconds, detail: `${report.numPassedTests} passed` };
}

if (args.includes('--check')) {
  // Only whether every patch still applies (after a merge): no test runs.
  let failed = 0;
  for (const mutant of selected) {
    const dir = scratchCopy(mutant.id);
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
const killersOf = (mutant) => (noModel ? mutant.killers.filter((killer) => !killer.file.startsWith('test/model/model-based')) : mutant.killers);
const keyOf = (killer) => `${killer.file} -t "${killer.name}"`;

// Control: every killer must pass on the tree without a mutant, or its "kill" would prove nothing.
const baseline = new Map();
{
  const dir = scratchCopy('baseline');
  for (const killer of selected.flatMap(killersOf)) {
    if (baseline.has(keyOf(killer))) continue;
    const result = runKiller(dir, killer);
    baseline.set(keyOf(killer), result);
    process.stdout.write(`baseline: ${result.verdict === 'survived' ? 'passes' : `FAILS (${result.detail})`} ${keyOf(killer)} (${result.seconds} s)\n`);
    if (result.verdict !== 'survived') bad = true;
  }
  rmSync(dir, { recursive: true, force: true });
}

for (const mutant of selected) {
  const dir = scratchCopy(mutant.id);
  try {
    applyMutant(mutant, dir);
  } catch (error) {
    rows.push({ mutant: mutant.id, killer: '-', verdict: 'DOES NOT APPLY', detail: error.message, seconds: 0 });
    bad = true;
    continue;
  }
  let killed = false;
  for (const killer of killersOf(mutant)) {
    const control = baseline.get(keyOf(killer));
    const result = control.verdict === 'survived' ? runKiller(dir, killer) : { verdict: 'fails unmutated', seconds: 0, detail: control.detail };
    rows.push({ mutant: mutant.id, killer: keyOf(killer), ...result });
    process.stdout.write(`${mutant.id}: ${result.verdict} by ${killer.file} (${result.seconds} s) ${result.detail}\n`);
    if (result.verdict === 'broken') bad = true;
    if (result.verdict === 'killed') killed = true;
  }
  if (!killed) bad = true;
  rmSync(dir, { recursive: true, force: true });
}
rmSync(scratchRoot, { recursive: true, force: true });

const table = [
  '| mutant | test | verdict | s | first failing test / detail |',
  '| --- | --- | --- | --- | --- |',
  ...rows.map((row) => `| ${row.mutant} | ${row.killer} | ${row.verdict} | ${row.seconds} | ${String(row.detail).replace(/\|/g, '/').slice(0, 140)} |`),
].join('\n');
process.stdout.write(`\n${table}\n`);
if (process.env.MUTANTS_REPORT) writeFileSync(process.env.MUTANTS_REPORT, `${table}\n`);
const survivors = selected.filter((m) => !rows.some((row) => row.mutant === m.id && row.verdict === 'killed'));
process.stdout.write(survivors.length ? `\nSURVIVED (or not run): ${survivors.map((m) => m.id).join(', ')}\n` : `\nall ${selected.length} mutants killed\n`);
process.exit(bad ? 1 : 0);
