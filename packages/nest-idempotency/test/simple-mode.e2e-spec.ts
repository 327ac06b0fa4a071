// Simple mode (issue 34): `@Idempotent()` alone on a handler whose effects are database writes. The
// interceptor claims the key, runs the handler in the one transaction that completes the record
// (`@IdempotencySession()`), and stores what it returned. Checked on both adapters, on the database.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { BadRequestException, Body, Controller, HttpCode, Param, Post, Res, type PipeTransform } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { ClientSession, Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { IdempotencyProblemFilter, IdempotencyReaper, IdempotencySession, Idempotent, RetryLaterError } from '../src/index.js';
import { APP_FILTER } from '@nestjs/core';
import { ADAPTERS, startModuleApp, type ModuleApp } from './support/module-app.js';

interface NoteBody {
  text: string;
}

/**
 * The conflict pass (EMULATOR_WRITE_CONFLICT_RATE) answers some transactional writes with a WriteConflict: the
 * transaction runner then runs the whole body - this handler - again, which is the retry working, not a second
 * execution (the database checks beside each count still say one note). There a count is a floor.
 */
const INJECTED_CONFLICTS = Number(process.env.EMULATOR_WRITE_CONFLICT_RATE ?? 0) > 0;
function expectRuns(count: number): void {
  if (INJECTED_CONFLICTS && count > 0) expect(behaviour.runs).toBeGreaterThanOrEqual(count);
  else expect(behaviour.runs).toBe(count);
}

/** What the next run of the handler does; each test sets it. */
const behaviour = {
  runs: 0,
  /** Awaited by the first run only, before it writes (a request in flight; a worker that stalls). */
  holdFirst: null as Promise<void> | null,
  /** Runs that got past their write (a write answered by an injected WriteConflict ends its run before). */
  written: 0,
  /** Thrown after the handler's write, by the runs it returns an error for (numbered among those that wrote). */
  fail: null as ((run: number) => Error | undefined) | null,
};

/** A pipe as a team writes one: runs after the claim in simple mode (Nest runs interceptors before pipes). */
class NoteText implements PipeTransform<unknown, NoteBody> {
  transform(value: unknown): NoteBody {
    const text = (value as Partial<NoteBody> | undefined)?.text;
    if (typeof text !== 'string' || text.length === 0) throw new BadRequestException('text: a non-empty string');
    return { text };
  }
}

@Controller('notes')
class NotesController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  // The whole idempotent route: no @Res(), no key, no protocol code.
  @Post()
  @Idempotent({ operation: 'notes.create' })
  async create(@Body(NoteText) body: NoteBody, @IdempotencySession() session: ClientSession) {
    const run = ++behaviour.runs;
    if (run === 1 && behaviour.holdFirst) await behaviour.holdFirst;
    const note = { _id: `note_${randomUUID()}`, text: body.text };
    await this.connection.collection<{ _id: string; text: string }>('notes').insertOne(note, { session });
    const failure = behaviour.fail?.(++behaviour.written);
    if (failure) throw failure;
    return { id: note._id, text: note.text };
  }

  /** The create with the duplicate guard: a body another key sent within the window is 409 possible_duplicate. */
  @Post('guarded')
  @Idempotent({ operation: 'notes.guarded', duplicateGuard: true })
  async createGuarded(@Body(NoteText) body: NoteBody, @IdempotencySession() session: ClientSession) {
    return this.create(body, session);
  }

  /** A keyed action on one note: 200 (`@HttpCode`), the note's id only in the path. */
  @Post(':id/pin')
  @HttpCode(200)
  @Idempotent({ operation: 'notes.pin' })
  async pin(@Param('id') id: string, @IdempotencySession() session: ClientSession) {
    const { matchedCount } = await this.connection.collection('notes').updateOne({ _id: id as never }, { $inc: { pins: 1 } }, { session });
    if (matchedCount === 0) throw new BadRequestException(`no note ${id}`);
    return { id, pinned: true };
  }

  /** Forgets a note: 204 and no body (`@HttpCode`). */
  @Post(':id/forget')
  @HttpCode(204)
  @Idempotent({ operation: 'notes.forget' })
  async forget(@Param('id') id: string, @IdempotencySession() session: ClientSession): Promise<void> {
    await this.connection.collection('notes').deleteOne({ _id: id as never }, { session });
  }

  /** A note queued for later: the handler answers 202 and a Location itself, not the route's 201. */
  @Post('queued')
  @Idempotent({ operation: 'notes.queue' })
  async queue(
    @Body(NoteText) body: NoteBody,
    @IdempotencySession() session: ClientSession,
    @Res({ passthrough: true }) res: { status(code: number): unknown; header(name: string, value: string): unknown },
  ) {
    const note = { _id: `note_${randomUUID()}`, text: body.text, queued: true };
    await this.connection.collection<{ _id: string }>('notes').insertOne(note, { session });
    res.status(202);
    res.header('Location', `/notes/${note._id}`);
    return { id: note._id, queued: true };
  }
}

describe.each(ADAPTERS)('simple mode: @Idempotent() alone, the handler in the transaction that completes the record, on %s', (adapter) => {
  let t: ModuleApp;
  const post = (key: string, body: object, path = '/notes') =>
    t.http().post(path).set('x-tenant', 'acme').set('Idempotency-Key', key).send(body);
  const records = () => t.db.collection('idempotency_records');
  const notes = () => t.db.collection('notes');
  const recordOf = (key: string, operation = 'notes.create') =>
    records().findOne({ _id: `acme:widgets-service:${operation}:key:${key}` as never });

  beforeAll(async () => {
    t = await startModuleApp({
      adapter,
      dbName: `test_package_simple_${adapter}`,
      controllers: [NotesController],
      providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
      options: {
        inFlight: { waitMs: 200 },
        lockTimeoutMs: 1_500,
        duplicateGuard: { windowSeconds: 60 },
        retryable: (error) => (error instanceof Error && error.message === 'ledger busy' ? 2 : undefined),
      },
    });
  });
  beforeEach(async () => {
    Object.assign(behaviour, { runs: 0, written: 0, holdFirst: null, fail: null });
    for (const name of ['idempotency_records', 'idempotency_tombstones', 'idempotency_duplicate_guard', 'notes'])
      await t.db.collection(name).deleteMany({});
  });
  afterAll(async () => t?.close());

  it('runs once and replays the original status, content type and bytes; the note and the record committed together', async () => {
    const first = await post('n-1', { text: 'milk' });
    const again = await post('n-1', { text: 'milk' });
    expect(first.status).toBe(201);
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    expect(first.headers['idempotency-expires']).toBeDefined();
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expectRuns(1);
    const [note] = await notes().find({}).toArray();
    expect(await notes().countDocuments()).toBe(1);
    expect(JSON.parse(first.text)).toEqual({ id: note._id, text: 'milk' });
    expect(await recordOf('n-1')).toMatchObject({ status: 'complete', recoveryPoint: 'completed', attempt: 1, lease: null });
    expect((await recordOf('n-1'))!.response).toMatchObject({ status: 201 });
  });

  it("sends the answer and its replay as one body with its Content-Length, not a chunked stream (the route's status)", async () => {
    const first = await post('n-len', { text: 'milk' });
    const again = await post('n-len', { text: 'milk' });
    for (const answer of [first, again]) {
      expect(answer.status).toBe(201);
      expect(answer.headers['transfer-encoding']).toBeUndefined();
      expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(first.text));
      expect(answer.headers['idempotency-expires']).toBeDefined();
    }
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await notes().countDocuments()).toBe(1);
  });

  it("replays a status the handler chose over the route's (202 + Location through @Res passthrough), and a 204 with no body", async () => {
    const first = await post('q-1', { text: 'later' }, '/notes/queued');
    const again = await post('q-1', { text: 'later' }, '/notes/queued');
    for (const answer of [first, again]) {
      expect(answer.status).toBe(202);
      expect(answer.headers['location']).toBe(`/notes/${first.body.id}`);
      expect(answer.body).toEqual({ id: first.body.id, queued: true });
    }
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await notes().countDocuments({ queued: true })).toBe(1);
    expect((await recordOf('q-1', 'notes.queue'))!.response).toMatchObject({
      status: 202,
      headers: { location: `/notes/${first.body.id}` },
    });

    const forgotten = await post('f-1', {}, `/notes/${first.body.id}/forget`);
    const forgottenAgain = await post('f-1', {}, `/notes/${first.body.id}/forget`);
    for (const answer of [forgotten, forgottenAgain]) {
      expect(answer.status).toBe(204);
      expect(answer.text).toBe('');
    }
    expect(forgottenAgain.headers['idempotent-replayed']).toBe('true');
    expect(await notes().countDocuments()).toBe(0);
  });

  it("binds the key to the resource: the route's status (@HttpCode 200), and another note under the same key is 422", async () => {
    const { body: a } = await post('n-a', { text: 'a' }).expect(201);
    const { body: b } = await post('n-b', { text: 'b' }).expect(201);
    const pinned = await post('p-1', {}, `/notes/${a.id}/pin`);
    expect(pinned.status).toBe(200);
    expect(pinned.body).toEqual({ id: a.id, pinned: true });
    const other = await post('p-1', {}, `/notes/${b.id}/pin`);
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await notes().findOne({ _id: a.id })).toMatchObject({ pins: 1 });
    expect((await notes().findOne({ _id: b.id }))!.pins).toBeUndefined();
  });

  it('answers the same key with another body 422, and runs nothing', async () => {
    await post('n-2', { text: 'milk' }).expect(201);
    const other = await post('n-2', { text: 'eggs' });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused' });
    expectRuns(1);
    expect((await notes().find({}).toArray()).map((note) => note.text)).toEqual(['milk']);
  });

  it('answers a duplicate of a request in flight 409 + Retry-After, then replays the one answer', async () => {
    let release!: () => void;
    behaviour.holdFirst = new Promise<void>((done) => (release = done));
    const first = post('n-3', { text: 'milk' }).then((res) => res);
    while (behaviour.runs === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const duplicate = await post('n-3', { text: 'milk' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ code: 'idempotency_key_in_use' });
    expect(Number(duplicate.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await notes().countDocuments()).toBe(0);
    expect(await recordOf('n-3')).toMatchObject({ status: 'pending' });
    release();
    expect((await first).status).toBe(201);
    const replay = await post('n-3', { text: 'milk' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe((await first).text);
    expect(await notes().countDocuments()).toBe(1);
  });

  it('a handler that throws after its write leaves no half state: no note, the attempt failed with nothing stored; the retry runs it once', async () => {
    behaviour.fail = (run) => (run === 1 ? new Error('boom') : undefined);
    const failed = await post('n-4', { text: 'milk' });
    expect(failed.status).toBe(500);
    expect(await notes().countDocuments()).toBe(0);
    expect(await recordOf('n-4')).toMatchObject({ status: 'failed', response: null, lease: null });
    const retried = await post('n-4', { text: 'milk' });
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(await notes().countDocuments()).toBe(1);
    expect(await recordOf('n-4')).toMatchObject({ status: 'complete', attempt: 2, recoveryPoint: 'completed' });
  });

  it('a RetryLaterError answers 503 retry_later + Retry-After, keeps nothing and leaves the key resumable; the retry succeeds', async () => {
    behaviour.fail = (run) => (run === 1 ? new RetryLaterError(3) : undefined);
    const later = await post('n-5', { text: 'milk' });
    expect(later.status).toBe(503);
    expect(later.headers['retry-after']).toBe('3');
    expect(later.body).toMatchObject({ code: 'retry_later', retryable: true, reuseKey: true });
    expect(await notes().countDocuments()).toBe(0);
    const held = await recordOf('n-5');
    expect(held).toMatchObject({ status: 'pending', response: null });
    expect(held!.lease.resumableUntil).toBeInstanceOf(Date);
    const retried = await post('n-5', { text: 'milk' });
    expect(retried.status).toBe(201);
    expect(await notes().countDocuments()).toBe(1);
    expect(await recordOf('n-5')).toMatchObject({ status: 'complete', attempt: 1, lease: null });
  });

  it('the retryable option maps an error the handler did not choose to 503 with its Retry-After', async () => {
    behaviour.fail = (run) => (run === 1 ? new Error('ledger busy') : undefined);
    const later = await post('n-6', { text: 'milk' });
    expect(later.status).toBe(503);
    expect(later.headers['retry-after']).toBe('2');
    expect(await notes().countDocuments()).toBe(0);
    expect((await post('n-6', { text: 'milk' })).status).toBe(201);
    expect(await notes().countDocuments()).toBe(1);
  });

  it("a stalled worker past its lease changes nothing: the retry takes over and commits; the stale run's note rolls back with its fenced completion", async () => {
    let release!: () => void;
    behaviour.holdFirst = new Promise<void>((done) => (release = done));
    const stale = post('n-7', { text: 'milk' }).then((res) => res);
    while (behaviour.runs === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    const takenOver = await post('n-7', { text: 'milk' });
    expect(takenOver.status).toBe(201);
    release();
    const late = await stale;
    expect(late.status).toBe(201);
    expect(late.headers['idempotent-replayed']).toBe('true');
    expect(late.text).toBe(takenOver.text);
    expectRuns(2);
    expect(await notes().countDocuments()).toBe(1);
    expect(await recordOf('n-7')).toMatchObject({ status: 'complete', lease: null });
  });

  it("the reaper ends a stale simple-mode attempt with nothing stored (registered for the route's operation at bootstrap); the stalled worker's run rolls back, then runs afresh", async () => {
    let release!: () => void;
    behaviour.holdFirst = new Promise<void>((done) => (release = done));
    const stalled = post('n-10', { text: 'milk' }).then((res) => res);
    while (behaviour.runs === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setTimeout(resolve, 1_700));
    const reaped = await t.app.get(IdempotencyReaper).runOnce();
    expect(reaped).toMatchObject({ examined: 1, abandoned: 1, error: 0 });
    expect(await recordOf('n-10')).toMatchObject({ status: 'failed', response: null, lease: null });
    expect(await notes().countDocuments()).toBe(0);
    release();
    // Its completion was fenced off (lease lost); the record it finds is failed with nothing stored, so it runs again.
    const answer = await stalled;
    expect(answer.status).toBe(201);
    expectRuns(2);
    expect(await notes().countDocuments()).toBe(1);
    expect(await recordOf('n-10')).toMatchObject({ status: 'complete', attempt: 2 });
  });

  it('a body a pipe refuses gives its claim back (issue 48): 400, no record; the corrected body under that key 201; its retry replays', async () => {
    const refused = await post('n-8', { text: '' });
    expect(refused.status).toBe(400);
    expectRuns(0);
    // Refused before the handler ran: nothing of the operation began, so the key keeps no record (Stripe saves none either).
    expect(await recordOf('n-8')).toBeNull();
    const corrected = await post('n-8', { text: 'milk' });
    expect(corrected.status).toBe(201);
    expect(corrected.headers['idempotent-replayed']).toBeUndefined();
    const again = await post('n-8', { text: 'milk' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(corrected.text);
    expectRuns(1);
    const [note] = await notes().find({}).toArray();
    expect(await notes().countDocuments()).toBe(1);
    expect(JSON.parse(corrected.text)).toEqual({ id: note._id, text: 'milk' });
    expect(await recordOf('n-8')).toMatchObject({ status: 'complete', attempt: 1, lease: null, response: { status: 201 } });
    // Refused again and again: never a record.
    expect((await post('n-9', { text: '' })).status).toBe(400);
    expect((await post('n-9', { text: '' })).status).toBe(400);
    expect(await recordOf('n-9')).toBeNull();
  });

  it("a refused body's claim takes its duplicate-guard entry with it: another key may send that body, never pointed at the key's later resource", async () => {
    const guard = () => t.db.collection<{ recordId: string }>('idempotency_duplicate_guard');
    expect((await post('g-1', { text: '' }, '/notes/guarded')).status).toBe(400);
    expect(await recordOf('g-1', 'notes.guarded')).toBeNull();
    expect(await guard().countDocuments()).toBe(0);
    // The key then used for another body: its record is the one a stale entry of the refused body would point at.
    expect((await post('g-1', { text: 'milk' }, '/notes/guarded')).status).toBe(201);
    const other = await post('g-2', { text: '' }, '/notes/guarded');
    expect(other.status).toBe(400);
    expect(other.body.code).not.toBe('possible_duplicate');
    expect((await guard().find({}).toArray()).map((entry) => entry.recordId)).toEqual([`acme:widgets-service:notes.guarded:key:g-1`]);
  });

  it('an error the handler throws after it started still binds the key to its body (the refusal rule is about pipes only)', async () => {
    behaviour.fail = () => new BadRequestException('the ledger refused it');
    expect((await post('n-11', { text: 'milk' })).status).toBe(400);
    expect(await recordOf('n-11')).toMatchObject({ status: 'failed', response: null });
    behaviour.fail = null;
    expect((await post('n-11', { text: 'bread' })).status).toBe(422);
    expect(await notes().countDocuments()).toBe(0);
  });
});
