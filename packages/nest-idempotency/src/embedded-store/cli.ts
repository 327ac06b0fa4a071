#!/usr/bin/env node
/**
 * `npx nest-idempotency-store`: the embedded store (startEmbeddedStore) as a
 * process of its own, for development. Prints `MONGODB_URI=<uri>` as its first
 * line on stdout (what an app or a test run reads), the caveats on stderr,
 * and runs until Ctrl-C (SIGINT) or SIGTERM; its data goes with it.
 * `--env-file FILE` also writes that line to FILE (for `node --env-file`), and
 * removes the file on exit.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EMBEDDED_STORE_CAVEATS, startEmbeddedStore } from './index.js';

const { values } = parseArgs({ options: { 'env-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
if (values.help) {
  process.stdout.write(
    'Usage: nest-idempotency-store [--env-file FILE]\n\nA MongoDB replica set for development and tests: ' + `${EMBEDDED_STORE_CAVEATS}.\n`,
  );
  process.exit(0);
}
const envFile = values['env-file'];
const store = await startEmbeddedStore();
const line = `MONGODB_URI=${store.uri}`;
if (envFile) writeFileSync(envFile, `${line}\n`);
process.stdout.write(`${line}\n`);
process.stderr.write(
  `Embedded store ready (jongodb emulator behind a serializing proxy). Caveats: ${EMBEDDED_STORE_CAVEATS}.\nCtrl-C stops it.\n`,
);
const cleanUp = () => {
  if (envFile) rmSync(envFile, { force: true });
};
store.onUnexpectedExit((reason) => {
  cleanUp();
  process.stderr.write(`The embedded store stopped on its own (${reason}), its data with it\n`);
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanUp();
    void store.stop().finally(() => process.exit(0));
  });
}
