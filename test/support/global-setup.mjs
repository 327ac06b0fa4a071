// One MongoDB replica set for the whole Jest run; its URI reaches every test
// file through the environment. Uses the same resolver as `npm start`
// (src/database/embedded-mongo.ts, built by `pretest`).
import { EMULATOR_GAPS, resolveMongoBackend } from '../../dist/src/database/embedded-mongo.js';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findRedisServer, startRedisServer } from '../../dist/bench/redis-server.js';

export default async function globalSetup() {
  // Each test file's process health (test/support/process-health.mjs), summed up by the summary reporter.
  process.env.TEST_HEALTH_FILE = join(tmpdir(), `jest-health-${process.pid}.jsonl`);
  rmSync(process.env.TEST_HEALTH_FILE, { force: true });
  const backend = await resolveMongoBackend(process.env);
  globalThis.__MONGO_BACKEND__ = backend;
  process.env.MONGODB_URI = backend.uri;
  process.env.TEST_MONGO_BACKEND = backend.kind;
  if (backend.unserializedUri) process.env.TEST_MONGO_UNSERIALIZED_URI = backend.unserializedUri;
  // The Redis fast path (issue 16): one real redis-server for the run, or its tests are skipped with the reason.
  const redis = findRedisServer();
  let redisLine;
  if ('binary' in redis) {
    const server = await startRedisServer();
    globalThis.__REDIS_SERVER__ = server;
    process.env.TEST_REDIS_URL = server.url;
    redisLine = ` Redis for the fast-path runs: redis-server at ${server.url} (nothing persisted)`;
  } else {
    delete process.env.TEST_REDIS_URL;
    redisLine = ` Redis fast-path runs SKIPPED: ${redis.missing}`;
  }
  const banner = [
    '',
    '='.repeat(78),
    ` MongoDB backend for this test run: ${backend.kind.toUpperCase()} - ${backend.description}`,
    ` URI: ${backend.uri}`,
    backend.kind === 'emulator'
      ? ` What it cannot prove: ${EMULATOR_GAPS}.\n` +
        ' Not every test runs here: the few that need a real storage engine (true snapshot-isolation\n' +
        ' interleavings) are SKIPPED, each printing its reason, and run in the hosted CI on a real replica set.'
      : ' Real storage engine: every test runs.',
    redisLine,
    '='.repeat(78),
    '',
  ];
  process.stdout.write(banner.join('\n') + '\n');
}
