/**
 * `npm run store`: the embedded MongoDB (emulator behind its serializing
 * proxy, or a mongod when one is installed) as a process of its own, so a
 * restarted `npm start` finds its earlier orders. It writes where it listens
 * to .data/embedded-store.json, which main.ts reads when MONGODB_URI is unset;
 * Ctrl-C stops it, and its data with it (nothing is written to disk).
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { resolveMongoBackend, SHARED_STORE_FILE } from '../embedded-mongo.js';

const env = { ...process.env };
delete env.MONGODB_URI;
const backend = await resolveMongoBackend(env);
mkdirSync(dirname(SHARED_STORE_FILE), { recursive: true });
writeFileSync(
  SHARED_STORE_FILE,
  `${JSON.stringify({ uri: backend.uri, pid: process.pid, description: backend.description, kind: backend.kind }, null, 2)}\n`,
);
process.stdout.write(
  `Embedded store ready: ${backend.description}\n  ${backend.uri}\n` +
    `npm start (without MONGODB_URI) now uses it, and its data outlives restarts of the service until this process stops (Ctrl-C).\n`,
);
backend.onUnexpectedExit((reason) => {
  rmSync(SHARED_STORE_FILE, { force: true });
  process.stderr.write(`The embedded store stopped on its own (${reason}), its data with it\n`);
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    rmSync(SHARED_STORE_FILE, { force: true });
    void backend.stop().finally(() => process.exit(0));
  });
}
