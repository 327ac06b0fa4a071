// One MongoDB replica set for the whole Jest run; its URI reaches every test
// file through the environment. Uses the same resolver as `npm start`
// (src/database/embedded-mongo.ts, built by `pretest`).
import { EMULATOR_GAPS, resolveMongoBackend } from '../../dist/src/database/embedded-mongo.js';

export default async function globalSetup() {
  const backend = await resolveMongoBackend(process.env);
  globalThis.__MONGO_BACKEND__ = backend;
  process.env.MONGODB_URI = backend.uri;
  process.env.TEST_MONGO_BACKEND = backend.kind;
  const banner = [
    '',
    '='.repeat(78),
    ` MongoDB backend for this test run: ${backend.kind.toUpperCase()} - ${backend.description}`,
    ` URI: ${backend.uri}`,
    backend.kind === 'emulator'
      ? ` Emulator gaps: ${EMULATOR_GAPS}.\n Tests that need real storage-engine concurrency are SKIPPED (reason printed).`
      : ' Real-concurrency tests run.',
    '='.repeat(78),
    '',
  ];
  process.stdout.write(banner.join('\n') + '\n');
}
