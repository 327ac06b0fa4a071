// Issue 48 item 3: the Redis fast path's entries changed format (3) so that the upgrade drops, once, every
// entry cached before records were checked against the request's tenant (0.1 cached them; such an entry
// could replay a colliding 0.1 record to another tenant until it expired). Shown on a real redis-server
// (the one the root globalSetup starts): an entry of format 2, sealed by this deployment for this very
// record and request, is not an answer - MongoDB decides, and what it answers is cached again as format 3.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Body, Controller, Post } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { APP_FILTER } from '@nestjs/core';
import { Redis } from 'ioredis';
import type { ClientSession, Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { IdempotencyProblemFilter, IdempotencySession, Idempotent } from '../src/index.js';
import { Sealer } from '../src/fast-path/cache-entry.js';
import { startModuleApp, TEST_OPTIONS, type ModuleApp } from './support/module-app.js';

const REDIS_URL = process.env.TEST_REDIS_URL;
const NAMESPACE = `idem-upgrade-${randomUUID().slice(0, 8)}`;

@Controller('notes')
class NotesController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  @Post()
  @Idempotent({ operation: 'notes.create' })
  async create(@Body() body: { text: string }, @IdempotencySession() session: ClientSession) {
    const note = { _id: `note_${randomUUID()}`, text: body.text };
    await this.connection.collection<{ _id: string; text: string }>('notes').insertOne(note, { session });
    return { id: note._id, text: note.text };
  }
}

if (!REDIS_URL) process.stdout.write('SKIPPED fast-path-upgrade: no redis-server on this machine (see the run banner)\n');
const describeWithRedis = REDIS_URL ? describe : describe.skip;

describeWithRedis('the fast path after the entry format bump (issue 48): an entry of the earlier format is never an answer', () => {
  let t: ModuleApp;
  let redis: Redis;
  const sealer = new Sealer(TEST_OPTIONS.digestKey);
  const recordId = (key: string) => `acme:widgets-service:notes.create:key:${key}`;
  const post = (key: string, text: string) => t.http().post('/notes').set('x-tenant', 'acme').set('Idempotency-Key', key).send({ text });

  /** The one entry (`{namespace}:resp:*`) the fast path keeps, and its JSON as written. */
  async function cachedEntry(): Promise<{ name: string; json: Record<string, unknown> }> {
    const names = await redis.keys(`${NAMESPACE}:resp:*`);
    expect(names).toHaveLength(1);
    const value = await redis.get(names[0]);
    return { name: names[0], json: JSON.parse(value!.slice(value!.indexOf('.') + 1)) as Record<string, unknown> };
  }

  beforeAll(async () => {
    redis = new Redis(REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    t = await startModuleApp({
      dbName: 'test_package_fast_path_upgrade',
      controllers: [NotesController],
      providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
      options: { fastPath: { url: REDIS_URL!, namespace: NAMESPACE, commandTimeoutMs: 2_000 } },
    });
  });
  beforeEach(async () => {
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'notes']) await t.db.collection(name).deleteMany({});
    const names = await redis.keys(`${NAMESPACE}:*`);
    if (names.length > 0) await redis.del(...names);
  });
  afterAll(async () => {
    await t?.close();
    const names = (await redis?.keys(`${NAMESPACE}:*`)) ?? [];
    if (names.length > 0) await redis.del(...names);
    redis?.disconnect();
  });

  it('writes format 3, ignores a well-sealed format-2 entry for the same request, and caches the answer of MongoDB again', async () => {
    const first = await post('u-1', 'milk');
    expect(first.status).toBe(201);
    const written = await cachedEntry();

    // The entry as the release before wrote it: the same fields, sealed by this deployment's key for this record.
    // Its record is gone from MongoDB (as a colliding 0.1 record is not the request's own): only Redis could answer.
    await redis.set(written.name, sealer.seal(recordId('u-1'), JSON.stringify({ ...written.json, v: 2 })), 'PX', 60_000);
    await t.db.collection('idempotency_records').deleteMany({});
    await t.db.collection('idempotency_tombstones').deleteMany({});

    const after = await post('u-1', 'milk');
    expect(after.status).toBe(201);
    expect(after.headers['idempotent-replayed']).toBeUndefined();
    expect(after.text).not.toBe(first.text);
    // The handler ran again: two notes committed. (Counted in the store, not as calls of the handler: under
    // `npm run test:conflicts` an injected write conflict reruns a transaction, and the handler with it.)
    expect(await t.db.collection('notes').countDocuments()).toBe(2);
    expect(await t.db.collection('idempotency_records').findOne({ _id: recordId('u-1') as never })).toMatchObject({
      status: 'complete',
      attempt: 1,
    });
    // What MongoDB answered replaced the old entry, in the new format; a retry is a replay again.
    expect((await cachedEntry()).json.v).toBe(3);
    const replay = await post('u-1', 'milk');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(after.text);
  });
});
