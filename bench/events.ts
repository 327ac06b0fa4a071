/**
 * `npm run bench -- --only events` (bench/run.ts hands over here): the outbox
 * relay against a real `nats-server -js` (bench/nats-server.ts):
 *
 * 1. drain: a backlog of `--events-backlog` pending events (10,000 by
 *    default; written straight into outbox_events, as many committed creates
 *    would leave them) relayed by one built service into JetStream: events/s,
 *    and the store commands per published event, counted at the wire by
 *    bench/command-counter.ts exactly as the create rows count a create's;
 * 2. latency: creates at `--events-concurrency` for `--events-seconds`, and
 *    for each, the time from the event's commit (its `time`) to its arrival
 *    in the stream (read by a subscription): p50 / p99.
 *
 * Figures on the emulator say nothing about MongoDB; the commands per event do.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { MongoClient } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { resolveMongoBackend } from '../src/database/embedded-mongo.js';
import { CommandCounter } from './command-counter.js';
import { findNatsServer, startNatsServer } from './nats-server.js';
import { sleep, startService, type ServiceProcess } from './service.js';

/** The target: store commands per published event with a 10,000 backlog. */
const COMMANDS_PER_EVENT_TARGET = 0.25;
const TENANT = 'bench';
const SECRET = 'bench-secret-0123456789';

interface EventsSettings {
  backlog: number;
  concurrency: number;
  seconds: number;
}

function readEventsSettings(argv: string[]): EventsSettings {
  const { values } = parseArgs({
    args: argv,
    strict: false,
    options: { 'events-backlog': { type: 'string' }, 'events-concurrency': { type: 'string' }, 'events-seconds': { type: 'string' } },
  });
  const int = (value: unknown, fallback: number) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : fallback);
  return {
    backlog: Math.max(1, int(values['events-backlog'], 10_000)),
    concurrency: Math.max(1, int(values['events-concurrency'], 4)),
    seconds: Math.max(1, int(values['events-seconds'], 20)),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `--only events` (alone): bench/run.ts hands the run over to runEventsBench. */
export function eventsOnly(argv: string[]): boolean {
  const index = argv.findIndex((arg) => arg === '--only' || arg.startsWith('--only='));
  if (index < 0) return false;
  const value = argv[index].includes('=') ? argv[index].split('=')[1] : argv[index + 1];
  return value === 'events';
}

/** Returns the exit code: 0 when the commands-per-event target holds. */
export async function runEventsBench(argv: string[], root: string): Promise<number> {
  const settings = readEventsSettings(argv);
  const found = findNatsServer();
  if ('missing' in found) {
    console.log(`events: not run: ${found.missing}`);
    return 1;
  }
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const backend = await resolveMongoBackend(process.env);
    cleanups.push(() => backend.stop());
    console.log(`MongoDB backend: ${backend.kind} - ${backend.description}`);
    const nats = await startNatsServer(found.binary);
    cleanups.push(() => nats.stop());
    const counter = await CommandCounter.start(backend.uri);
    cleanups.push(() => counter.close());
    const stamp = Date.now();
    const dbName = `bench_events_${stamp}`;
    const service = await startService({
      name: 'service (events)',
      root,
      mongoUri: backend.uri,
      dbName,
      simulatorDbName: `${dbName}_psp`,
      disableIdempotency: false,
      paymentLatencyMs: 0,
      apiKeys: `${TENANT}:${SECRET}`,
      counter,
      env: { NATS_URL: nats.url, LOG_LEVEL: 'warn' },
    });
    cleanups.push(() => service.stop());
    const mongo = await MongoClient.connect(backend.uri, { serverMonitoringMode: 'poll' });
    cleanups.push(() => mongo.close());
    const outbox = mongo.db(dbName).collection('outbox_events');

    const drain = await measureDrain(outbox, counter, settings.backlog);
    // What the broker holds, not what the outbox says it published: the stream is empty before the drain.
    const inStream = await streamMessages(nats.url);
    console.log(`  drained ${settings.backlog} events in ${drain.seconds.toFixed(1)} s with ${drain.commands} store commands`);
    const latency = await measureLatency(service, nats.url, settings);

    // The relay's own commands (every one names outbox_events); the rest is the service's other background work
    // over the drain - the webhook dispatcher consuming the same events, the delivery worker's polls - printed apart.
    const relayCommands = Object.entries(drain.byName)
      .filter(([name]) => name.includes('outbox_events'))
      .reduce((total, [, count]) => total + count, 0);
    const perEvent = relayCommands / settings.backlog;
    console.log('\nEvents into NATS JetStream (emulator behind the serializing proxy: rates say nothing about MongoDB)');
    console.log(
      `  drain          ${settings.backlog} events in ${drain.seconds.toFixed(1)} s: ${(settings.backlog / drain.seconds).toFixed(0)} events/s`,
    );
    console.log(
      `  store commands ${relayCommands} by the relay for ${settings.backlog} events: ${perEvent.toFixed(3)} per published event (target <= ${COMMANDS_PER_EVENT_TARGET})`,
    );
    console.log(
      `                 ${drain.commands - relayCommands} more by the consumers and timers over the drain (the webhook dispatcher, its delivery worker): ${((drain.commands - relayCommands) / settings.backlog).toFixed(3)} per event`,
    );
    console.log(`                 by name: ${JSON.stringify(drain.byName)}`);
    console.log(
      `  create->stream ${latency.samples} events under ${settings.concurrency} concurrent creates (${latency.createsPerSecond.toFixed(1)} creates/s): p50 ${latency.p50.toFixed(0)} ms, p99 ${latency.p99.toFixed(0)} ms (relay interval: OUTBOX_RELAY_INTERVAL_MS, default 1000 ms)`,
    );
    const ok = perEvent <= COMMANDS_PER_EVENT_TARGET && drain.published === settings.backlog && inStream === settings.backlog;
    console.log(
      `  check          ${ok ? 'PASS' : 'FAIL'}: ${inStream} messages in the stream and ${drain.published} events marked published, of ${settings.backlog}; ${perEvent.toFixed(3)} commands per event`,
    );
    return ok ? 0 : 1;
  } finally {
    while (cleanups.length > 0) await cleanups.pop()!().catch((error: Error) => process.stderr.write(`cleanup: ${error.message}\n`));
  }
}

/** Writes the backlog due a little later, then times the service's relay until none is pending. */
async function measureDrain(
  outbox: ReturnType<ReturnType<MongoClient['db']>['collection']>,
  counter: CommandCounter,
  backlog: number,
): Promise<{ seconds: number; commands: number; byName: Record<string, number>; published: number }> {
  const createdAt = new Date();
  // Not due until every write is in (they are slow on the emulator): then all at once.
  const notYet = new Date('2999-01-01T00:00:00Z');
  const docs = Array.from({ length: backlog }, (_, i) => {
    const orderId = `ord_bench_${i}_${randomUUID().slice(0, 8)}`;
    return {
      _id: `evt_${orderId}_completed`,
      tenant: TENANT,
      type: 'order.completed',
      aggregateId: orderId,
      schemaVersion: 2,
      sequence: 1,
      payload: { id: orderId, state: 'saved', amountMinor: 2500, currency: 'USD' },
      status: 'pending',
      attempts: 0,
      availableAt: notYet,
      createdAt,
      publishedAt: null,
      lastError: null,
    };
  });
  for (let i = 0; i < docs.length; i += 1000) await outbox.insertMany(docs.slice(i, i + 1000) as never[]);
  const before = counter.snapshot();
  await outbox.updateMany({ status: 'pending' }, { $set: { availableAt: new Date() } });
  console.log(`  backlog of ${backlog} pending events written and due`);
  const started = performance.now();
  // Polled once a second with a cheap query: the emulator serves one command at a time, and a count over a
  // 10,000-event collection there takes seconds, which the relay would wait behind.
  let lastReport = started;
  while (await outbox.findOne({ status: 'pending' }, { projection: { _id: 1 } })) {
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      console.log(
        `  drain: ${((lastReport - started) / 1000).toFixed(0)} s, ${counter.snapshot().commands - before.commands} store commands so far`,
      );
    }
    await sleep(1000);
  }
  const seconds = (performance.now() - started) / 1000;
  const after = counter.snapshot();
  const byName = Object.fromEntries(
    Object.entries(after.byName)
      .map(([name, count]) => [name, count - (before.byName[name] ?? 0)] as const)
      .filter(([, count]) => count > 0),
  );
  const published = await outbox.countDocuments({ status: 'published' });
  return { seconds, commands: after.commands - before.commands, byName, published };
}

/** Messages in the service's stream (ORDER_EVENTS, the default NATS_STREAM), as JetStream counts them. */
async function streamMessages(natsUrl: string): Promise<number> {
  const connection = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(connection);
    return (await jsm.streams.info('ORDER_EVENTS')).state.messages;
  } finally {
    await connection.close();
  }
}

/** Creates under load; each event's commit-to-stream time, from a subscription started before the load. */
async function measureLatency(service: ServiceProcess, natsUrl: string, settings: EventsSettings) {
  const connection = await connect({ servers: natsUrl });
  const latencies: number[] = [];
  try {
    // A core subscription sees each message as the server takes it in for the stream (what the relay's ack follows).
    const messages = connection.subscribe('orders.events.order.completed');
    const reading = (async () => {
      for await (const message of messages) {
        const event = message.json<{ time: string; tenant: string }>();
        if (event.tenant === TENANT) latencies.push(Date.now() - Date.parse(event.time));
      }
    })();
    let creates = 0;
    const deadline = Date.now() + settings.seconds * 1000;
    const body = JSON.stringify({
      customerId: 'cus_bench',
      currency: 'USD',
      items: [{ sku: 'sku_1', quantity: 1, unitPriceMinor: 2500 }],
      paymentMethod: { token: 'tok_visa' },
    });
    await Promise.all(
      Array.from({ length: settings.concurrency }, async () => {
        while (Date.now() < deadline) {
          const response = await fetch(`${service.baseUrl}/v1/orders`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${SECRET}`, 'Idempotency-Key': randomUUID(), 'Content-Type': 'application/json' },
            body,
          });
          await response.arrayBuffer();
          if (response.status === 201) creates++;
        }
      }),
    );
    const settleBy = Date.now() + 30_000;
    while (latencies.length < creates && Date.now() < settleBy) await sleep(100);
    messages.unsubscribe();
    await reading;
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      samples: sorted.length,
      createsPerSecond: creates / settings.seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
    };
  } finally {
    await connection.close();
  }
}
