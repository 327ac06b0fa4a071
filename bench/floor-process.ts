/**
 * The floors, in a process of their own so that their CPU is measured from
 * /proc exactly as the service's is (`dist/bench/floor-process.js`, started
 * by bench/floor.ts):
 *  - the read floor: a bare Fastify server, `GET /orders/:id` = one driver
 *    `findOne` by `_id` on the same store (no auth, no Nest, no Mongoose), and
 *    `GET /hello` = Fastify's hello world (the floor of /health/live);
 *  - the create floor: on an IPC message, `BenchStore.rawCreateLoop` (the
 *    same store work as one create, bare driver), answered by IPC.
 * Environment: MONGODB_URI, MONGODB_DB_NAME, PAYMENT_SIMULATOR_DB_NAME, PORT.
 */
import Fastify from 'fastify';
import { BenchStore, type RawLoopResult } from './store.js';

export interface CreateLoopRequest {
  type: 'create-loop';
  workers: number;
  durationSeconds: number;
  keyPrefix: string;
}
export type FloorMessage = { type: 'create-loop-done'; result: RawLoopResult } | { type: 'create-loop-failed'; message: string };

async function main(): Promise<void> {
  const env = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is required`);
    return value;
  };
  const store = await BenchStore.connect(env('MONGODB_URI'), env('MONGODB_DB_NAME'), env('PAYMENT_SIMULATOR_DB_NAME'));
  const orders = store.db.collection<{ _id: string }>('orders');
  const app = Fastify({ logger: false });
  app.get('/hello', () => ({ status: 'ok' }));
  app.get<{ Params: { id: string } }>('/orders/:id', async (request, reply) => {
    const order = await orders.findOne({ _id: request.params.id });
    if (!order) return reply.code(404).send({ status: 404 });
    return order;
  });
  app.get('/health/ready', () => ({ status: 'ok' }));
  await app.listen({ host: '127.0.0.1', port: Number(env('PORT')) });

  process.on('message', (message: CreateLoopRequest) => {
    if (message.type !== 'create-loop') return;
    store.rawCreateLoop(message.workers, message.durationSeconds, message.keyPrefix).then(
      (result) => process.send!({ type: 'create-loop-done', result } satisfies FloorMessage),
      (error: Error) => process.send!({ type: 'create-loop-failed', message: error.message } satisfies FloorMessage),
    );
  });
  const stop = () => void app.close().finally(() => void store.close().finally(() => process.exit(0)));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`floor process: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
