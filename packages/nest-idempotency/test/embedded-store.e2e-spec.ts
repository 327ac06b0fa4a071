// Issue 48 item 5: a replica set without Docker or the internet. The package gives its users the embedded
// store its own repository runs on - the jongodb emulator from npm behind the serializing proxy - as
// `startEmbeddedStore()` (`./embedded-store`) and as the `nest-idempotency-store` bin. Shown here on its
// own emulator (not the run's MongoDB): the package's module boots on it and keeps its contract (the
// record and the handler's write commit together; a retry replays), and the bin prints a URI that works.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Body, Controller, Post } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { ClientSession, Connection } from 'mongoose';
import { MongoClient } from 'mongodb';
import { IdempotencySession, Idempotent } from '../src/index.js';
import { EMBEDDED_STORE_CAVEATS, startEmbeddedStore, type EmbeddedStore } from '../src/embedded-store/index.js';
import { startModuleApp, type ModuleApp } from './support/module-app.js';

const BIN = fileURLToPath(new URL('../dist/embedded-store/cli.js', import.meta.url));

@Controller('notes')
class NotesController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  @Post()
  @Idempotent({ operation: 'notes.create' })
  async create(@Body() body: { text: string }, @IdempotencySession() session: ClientSession) {
    const note = { _id: `note_${Date.now()}_${Math.random()}`, text: body.text };
    await this.connection.collection<{ _id: string; text: string }>('notes').insertOne(note, { session });
    return { id: note._id };
  }
}

describe('the embedded store for package users (issue 48 item 5)', () => {
  let store: EmbeddedStore;
  let t: ModuleApp;
  const saved = process.env.MONGODB_URI;

  beforeAll(async () => {
    store = await startEmbeddedStore({ log: () => undefined });
    process.env.MONGODB_URI = store.uri; // startModuleApp connects to MONGODB_URI
    t = await startModuleApp({ dbName: 'embedded_store_users', controllers: [NotesController] });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    process.env.MONGODB_URI = saved;
    await store?.stop();
  });

  it('is a replica set the module runs on: one note and one record per key, the retry replayed', async () => {
    const post = () => t.http().post('/notes').set('x-tenant', 'acme').set('Idempotency-Key', 'e-1').send({ text: 'milk' });
    const first = await post();
    const again = await post();
    expect(first.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await t.db.collection('notes').countDocuments()).toBe(1);
    expect(await t.db.collection('idempotency_records').findOne({ clientKey: 'e-1' })).toMatchObject({ status: 'complete' });
    expect(store.stats.transactions).toBeGreaterThan(0);
  });

  it('states its caveats: development and tests only, transactions serialized, TTL never expires, linux-x64', () => {
    expect(EMBEDDED_STORE_CAVEATS).toMatch(/never production/);
    expect(EMBEDDED_STORE_CAVEATS).toMatch(/one at a time/);
    expect(EMBEDDED_STORE_CAVEATS).toMatch(/TTL indexes never expire/);
    expect(EMBEDDED_STORE_CAVEATS).toMatch(/linux-x64/);
  });

  it('the nest-idempotency-store bin (built) prints MONGODB_URI first, serves a replica set, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = once(child, 'exit');
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      expect(line).toMatch(/^MONGODB_URI=mongodb:\/\/127\.0\.0\.1:\d+\//);
      const client = await MongoClient.connect(line.slice('MONGODB_URI='.length));
      try {
        const hello = await client.db('admin').command({ hello: 1 });
        expect(hello.setName).toEqual(expect.any(String));
        await client
          .db('bin_check')
          .collection('things')
          .insertOne({ _id: 'one' as never });
        expect(await client.db('bin_check').collection('things').countDocuments()).toBe(1);
      } finally {
        await client.close();
      }
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
  }, 60_000);
});
