import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The built reconcile CLI (npm run reconcile): tests run it as an operator does, on the test's own databases. */
const CLI = fileURLToPath(new URL('../../dist/src/reconcile.cli.js', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run reconcile -- --from --to` against database `dbName` (and its
 * simulator's `${dbName}_psp`), with `env` on top; resolves with the exit
 * code (0 clean books, 1 mismatches) and both streams, never rejects.
 */
export async function reconcileCli(dbName: string, from: Date, to: Date, env: Record<string, string> = {}): Promise<CliRun> {
  return promisify(execFile)(process.execPath, [CLI, '--from', from.toISOString(), '--to', to.toISOString()], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      MONGODB_DB_NAME: dbName,
      PAYMENT_SIMULATOR_DB_NAME: `${dbName}_psp`,
      LOG_LEVEL: 'silent',
      ...env,
    },
  }).then(
    (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
    (error: CliRun) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}
