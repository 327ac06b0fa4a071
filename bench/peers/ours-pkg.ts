/**
 * The twin of the peer's bench app (issue 47 item 1; bench/peers/node-idempotency/main.cjs): the same
 * bare Nest app on Fastify, the same routes and the same handler, with OUR package in simple mode
 * (`@Idempotent()` + `@IdempotencySession()`) instead of `@node-idempotency/nestjs`, and its Redis
 * fast path on the same redis-server as the peer's Redis process. Started and measured by
 * bench/peers.ts beside the peer; built by the root build (dist/bench/peers/ours-pkg.js), on this
 * project's Nest 12 (the peer needs Nest 10 and has its own install).
 *
 *  - `POST /v1/orders`: the key claimed by the package, then the handler's one driver `insertOne` of
 *    the order into this twin's collection inside the package's transaction (the order and the key's
 *    record commit together: the durable record the peer does not write), 201 with the order as JSON;
 *  - `GET /v1/orders/:id`: one driver `findOne` by `_id`, 200 with the order (404 when absent);
 *  - `GET /health/ready` for the launcher.
 *
 * As the peer's: no authentication, no rate limits, no request log, no validation beyond the shape the
 * insert needs. One tenant for every request (the package scopes keys by tenant; the peer does not).
 *
 * Environment: MONGODB_URI, MONGODB_DB_NAME, HOST, PORT (set by bench/service.ts), PEER_COLLECTION
 * (the orders collection), PEER_REDIS_URL (the fast path; MongoDB only when absent).
 */
import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { BadRequestException, Body, Controller, Get, Headers, NotFoundException, Param, Post, type DynamicModule } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { InjectConnection, MongooseModule } from '@nestjs/mongoose';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { IdempotencyModule, IdempotencyProblemFilter, IdempotencySession, Idempotent } from '@idempotent-orders/nest-idempotency';
import type { ClientSession, Connection } from 'mongoose';

interface TwinOrder {
  _id: string;
  customerId: string;
  currency: string;
  items: { sku: string; quantity: number; unitPriceMinor: number }[];
  amountMinor: number;
  status: 'saved';
  idempotencyKey: string;
  createdAt: string;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

/** What the routes answer: the stored order with `id` for `_id` (as the peer's view()). */
function view(order: TwinOrder) {
  const { _id, ...rest } = order;
  return { id: _id, ...rest };
}

@Controller('v1/orders')
class OrdersController {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  /** The peer's handler, line for line, but its insert goes through the package's session. */
  @Post()
  @Idempotent({ operation: 'orders.create' })
  async create(
    @Body() body: { customerId?: unknown; currency?: unknown; items?: unknown },
    @Headers('idempotency-key') key: string,
    @IdempotencySession() session: ClientSession,
  ) {
    if (!body || typeof body !== 'object' || !Array.isArray(body.items) || body.items.length === 0) {
      throw new BadRequestException('items must be a non-empty array');
    }
    const items = (body.items as Record<string, unknown>[]).map((item) => ({
      sku: String(item.sku),
      quantity: Number(item.quantity),
      unitPriceMinor: Number(item.unitPriceMinor),
    }));
    const order: TwinOrder = {
      _id: `ord_${randomUUID().replace(/-/g, '')}`,
      customerId: String(body.customerId),
      currency: String(body.currency),
      items,
      amountMinor: items.reduce((sum, item) => sum + item.quantity * item.unitPriceMinor, 0),
      status: 'saved',
      idempotencyKey: key,
      createdAt: new Date().toISOString(),
    };
    await this.orders().insertOne(order, { session });
    return view(order);
  }

  @Get(':id')
  async get(@Param('id') id: string) {
    const order = await this.orders().findOne({ _id: id });
    if (!order) throw new NotFoundException();
    return view(order);
  }

  private orders() {
    return this.connection.collection<TwinOrder>(env('PEER_COLLECTION'));
  }
}

@Controller('health')
class HealthController {
  @Get('ready')
  ready() {
    return { status: 'ok' };
  }
}

function twinModule(): DynamicModule {
  const redisUrl = process.env.PEER_REDIS_URL;
  return {
    module: class TwinModule {},
    imports: [
      // As src/database/database.module.ts connects our service: polling heartbeats (what the emulator supports)
      // and the durable write concern the package's records are written with.
      MongooseModule.forRoot(env('MONGODB_URI'), {
        dbName: env('MONGODB_DB_NAME'),
        bufferCommands: false,
        serverMonitoringMode: 'poll',
        writeConcern: { w: 'majority', j: true },
      }),
      IdempotencyModule.forRoot({
        service: 'bench-twin',
        // One tenant: the peer has no auth, and the bench sends one API key.
        tenant: () => 'bench',
        // Fresh keys per process: nothing this twin stores outlives the run.
        encryption: { current: { id: 'k1', key: randomBytes(32) } },
        digestKey: randomBytes(32),
        fastPath: redisUrl ? { url: redisUrl, namespace: `twin-${process.pid}` } : undefined,
        // As the bench runs our service (REAPER_ENABLED=false), and the peer has none: no sweep in the windows.
        reaper: { enabled: false },
      }),
    ],
    controllers: [OrdersController, HealthController],
    providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
  };
}

const app = await NestFactory.create<NestFastifyApplication>(twinModule(), new FastifyAdapter(), { logger: ['error', 'warn'] });
await app.listen(Number(env('PORT')), process.env.HOST || '127.0.0.1');

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  app
    .close()
    .catch(() => undefined)
    .finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
// bench/service.ts starts a script with an IPC channel: the benchmark gone = stop.
process.once('disconnect', stop);
