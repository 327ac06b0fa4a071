#!/usr/bin/env node
// The soak tier (issue 33 item 4): what the gate (`npm test`) leaves out because it takes long or needs
// the machine to itself, run on its own schedule (nightly in the hosted workflow, after the gate in .ci/run).
//
//   npm run test:soak                          every step below, in order; exit 1 if any failed
//   npm run test:soak -- --only model,process  some steps
//   MODEL_SEED=123 npm run test:soak -- --only model   the model again with a seed a soak printed
//
// Steps: process (the real-process crash, chaos, timing and limits suites: test/process/), packaging
// (the tarballs installed and run: test/packaging/), model (the model-based properties at their full
// budgets, one random seed for all, printed first), conflicts (the conflict pass: npm run test:conflicts,
// its model runs under the same seed) and mutants (every kept mutant, scripts/mutants/run.mjs).
//
// A model failure prints its seed and path and the exact command that replays it; once understood, the
// shrunk counterexample becomes a row of test/model/model-regressions.e2e-spec.ts, which the gate replays.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const onlyArg = args.find((arg) => arg.startsWith('--only'));
const only = onlyArg ? (onlyArg.includes('=') ? onlyArg.split('=')[1] : args[args.indexOf(onlyArg) + 1]).split(',') : null;
const seed = process.env.MODEL_SEED !== undefined ? Number(process.env.MODEL_SEED) : (Math.random() * 2 ** 31) | 0;
// As the gate runs (docs/testing.md): the files one at a time in one Jest worker, replaced once its heap passes
// 1 GB after a file. In band, every file's modules stay in Jest's own heap (its ESM registry) and its GC pauses
// stall the emulator's proxy, which runs there too.
const jest = [
  '--experimental-vm-modules',
  '--max-old-space-size=8192',
  'node_modules/jest/bin/jest.js',
  '--maxWorkers=1',
  '--workerIdleMemoryLimit=1GB',
];
const reports = mkdtempSync(join(tmpdir(), 'soak-'));
const MODEL_FILE = 'test/model/model-based.e2e-spec.ts';

const STEPS = [
  { id: 'process', jest: ['test/process/', '--selectProjects', 'soak'] },
  { id: 'packaging', jest: ['test/packaging/', '--selectProjects', 'soak'] },
  // The full budgets are the file's defaults (MODEL_RUNS=300 and its fractions) unless the environment says otherwise.
  // The money model on the Stripe adapter: 60 runs (~4 min on 2 shared cores), where the gate runs 10.
  {
    id: 'model',
    jest: [MODEL_FILE, '--selectProjects', 'e2e'],
    env: { MODEL_SEED: String(seed), MODEL_MONEY_STRIPE_RUNS: process.env.MODEL_MONEY_STRIPE_RUNS ?? '60' },
  },
  { id: 'conflicts', npm: 'test:conflicts', env: { MODEL_SEED: String(seed) } },
  // Every kept mutant; its model-based killers at MODEL_RUNS=100 under the same seed (a killed mutant stops
  // at its first failure; the budget is the control's, which must pass) - keeps the soak inside its timeout.
  { id: 'mutants', node: ['scripts/mutants/run.mjs'], env: { MODEL_RUNS: process.env.MODEL_RUNS ?? '100', MODEL_SEED: String(seed) } },
];

/** fast-check's report of a failed property: `{ seed: -746229142, path: "44:8:10", endOnFailure: true }`. */
function replays(reportPath) {
  if (!existsSync(reportPath)) return [];
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  return report.testResults.flatMap((suite) =>
    suite.assertionResults
      .filter((test) => test.status === 'failed')
      .flatMap((test) => {
        const found = test.failureMessages.join('\n').match(/seed: (-?\d+), path: "([^"]+)"/);
        if (!found) return [];
        const file = suite.name.slice(root.length + 1);
        const name = test.title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/'/g, "'\\''");
        return [
          `MODEL_SEED=${found[1]} MODEL_PATH='${found[2]}' node --experimental-vm-modules node_modules/jest/bin/jest.js --runInBand ${file} -t '${name}'`,
        ];
      }),
  );
}

console.log(`soak: model seed ${seed} (MODEL_SEED=${seed} npm run test:soak -- --only model runs the same runs again)`);
const results = [];
for (const step of STEPS.filter((s) => !only || only.includes(s.id))) {
  const started = Date.now();
  const report = join(reports, `${step.id}.json`);
  const env = { ...process.env, ...step.env };
  const options = { cwd: root, env, stdio: 'inherit' };
  const json = ['--json', `--outputFile=${report}`];
  const run = step.npm
    ? spawnSync('npm', ['run', step.npm, '--', ...json], options)
    : spawnSync(process.execPath, step.node ?? [...jest, ...json, ...step.jest], options);
  const seconds = Math.round((Date.now() - started) / 1000);
  const ok = run.status === 0;
  results.push({ id: step.id, ok, seconds });
  console.log(`soak: ${step.id} ${ok ? 'passed' : 'FAILED'} in ${seconds} s`);
  for (const command of replays(report)) {
    console.log(
      `soak: replay the failing model run with\n  ${command}\nthen keep its shrunk counterexample as a row of test/model/model-regressions.e2e-spec.ts`,
    );
  }
}
rmSync(reports, { recursive: true, force: true });
console.log(`\nsoak (model seed ${seed}):`);
for (const { id, ok, seconds } of results) console.log(`  ${id.padEnd(10)} ${ok ? 'passed' : 'FAILED'}  ${seconds} s`);
console.log(`  total      ${results.reduce((sum, r) => sum + r.seconds, 0)} s`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
