// The consumer side's cost (issue 46): messages recorded per second through IdempotentMessages, one transaction per
// message against one per batch, on the store the bench resolves (MONGODB_URI, else the embedded backend).
//   npm run build && node dist/bench/inbox.js [--messages 400] [--batches 1,10,100]
// Figures on the emulator say nothing about MongoDB: it serializes transactions (see docs/benchmarks.md).
import mongoose from 'mongoose';
import { parseArgs } from 'node:util';
import {
  IdempotentMessages,
  NoopIdempotencyMetrics,
  TransactionRunner,
  type IdempotencySettings,
} from '@idempotent-orders/nest-idempotency';
import { resolveMongoBackend } from '../src/database/embedded-mongo.js';

const { values } = parseArgs({
  options: { messages: { type: 'string', default: '400' }, batches: { type: 'string', default: '1,10,100' } },
});
const total = Number(values.messages);
const batchSizes = values.batches.split(',').map(Number);

async function main(): Promise<void> {
  const backend = await resolveMongoBackend(process.env);
  const connection = await mongoose
    .createConnection(backend.uri, { dbName: 'bench_inbox', writeConcern: { w: 'majority', j: true }, serverMonitoringMode: 'poll' })
    .asPromise();
  // The runner alone, as the module builds it: only the retry budget of its settings is read.
  const runner = new TransactionRunner(connection, { transactionMaxRetryMs: 10_000 } as IdempotencySettings, new NoopIdempotencyMetrics());
  const messages = new IdempotentMessages(runner, connection);
  await messages.onModuleInit();
  const effects = connection.collection<{ _id: string }>('bench_effects');
  console.log(`store: ${backend.description}`);
  console.log('batch size | messages | seconds | messages/s | transactions');
  try {
    for (const size of batchSizes) {
      await connection.collection('idempotency_inbox').deleteMany({});
      await effects.deleteMany({});
      const started = performance.now();
      for (let sent = 0; sent < total; sent += size) {
        const batch = Array.from({ length: Math.min(size, total - sent) }, (_, i) => ({ id: `evt_${size}_${sent + i}` }));
        await messages.handleBatch('bench', batch, async (session, fresh) => {
          await effects.insertMany(
            fresh.map((m) => ({ _id: m.id })),
            { session },
          );
        });
      }
      const seconds = (performance.now() - started) / 1000;
      const recorded = await effects.countDocuments();
      if (recorded !== total) throw new Error(`batch ${size}: ${recorded} effects for ${total} messages`);
      console.log(`${size} | ${total} | ${seconds.toFixed(2)} | ${(total / seconds).toFixed(0)} | ${Math.ceil(total / size)}`);
    }
  } finally {
    await connection.close();
    await backend.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
