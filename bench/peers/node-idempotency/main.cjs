'use strict';
/**
 * The benchmark's peer (bench/README.md, "Peers"; started and measured by bench/peers.ts):
 * `@node-idempotency/nestjs` 1.0.4 on Nest 10 + Fastify 4 - the versions it supports (Nest ^9 || ^10.3.8)
 * - on the orders service's routes, as closely as is fair:
 *
 *  - `POST /v1/orders` under the peer's interceptor (`@Idempotent({ enforceIdempotency: true })`: like
 *    ours, no `Idempotency-Key` = 400): one driver `insertOne` of the order into this peer's collection,
 *    201 with the order as JSON;
 *  - `GET /v1/orders/:id`: one driver `findOne` by `_id`, 200 with the order (404 when absent);
 *  - `GET /health/ready` for the launcher.
 *
 * No authentication, no rate limits, no request log, no body validation beyond the shape the insert
 * needs, no payment: the orders service does all of these, so a row of this process is a lower bound
 * for what the peer would cost in the same service. Plain CommonJS with the decorators applied by hand
 * (no build step, nothing the root tsc, ESLint, Prettier or Jest sees); its own package.json and lock,
 * installed with `npm ci` by the benchmark.
 *
 * Environment: MONGODB_URI, MONGODB_DB_NAME, HOST, PORT (set by bench/service.ts), PEER_STORAGE
 * (`memory` | `redis`), PEER_REDIS_URL (redis only), PEER_COLLECTION (the orders collection).
 */
require('reflect-metadata');
const { randomUUID } = require('node:crypto');
const {
  BadRequestException,
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Inject,
  Module,
  NotFoundException,
  Param,
  Post,
} = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { FastifyAdapter } = require('@nestjs/platform-fastify');
const { Idempotent, NodeIdempotencyModule, StorageAdapterEnum } = require('@node-idempotency/nestjs');
const { MongoClient } = require('mongodb');

const ORDERS = 'PEER_ORDERS_COLLECTION';

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

/** What the routes answer: the stored order with `id` for `_id`. */
function view(order) {
  const { _id, ...rest } = order;
  return { id: _id, ...rest };
}

/** TypeScript's decorators, applied by hand: class, method (with its descriptor) and parameter decorators. */
function decorateClass(target, decorators) {
  return Reflect.decorate(decorators, target);
}
function decorateMethod(target, name, decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(target.prototype, name);
  Object.defineProperty(target.prototype, name, Reflect.decorate(decorators, target.prototype, name, descriptor));
}
function decorateParameter(target, name, index, decorator) {
  decorator(name === undefined ? target : target.prototype, name, index);
}

class OrdersController {
  constructor(orders) {
    this.orders = orders;
  }

  async create(body, key) {
    if (!body || typeof body !== 'object' || !Array.isArray(body.items) || body.items.length === 0) {
      throw new BadRequestException('items must be a non-empty array');
    }
    const items = body.items.map((item) => ({
      sku: String(item.sku),
      quantity: Number(item.quantity),
      unitPriceMinor: Number(item.unitPriceMinor),
    }));
    const order = {
      _id: `ord_${randomUUID().replace(/-/g, '')}`,
      customerId: String(body.customerId),
      currency: String(body.currency),
      items,
      amountMinor: items.reduce((sum, item) => sum + item.quantity * item.unitPriceMinor, 0),
      status: 'saved',
      idempotencyKey: key,
      createdAt: new Date().toISOString(),
    };
    await this.orders.insertOne(order);
    return view(order);
  }

  async get(id) {
    const order = await this.orders.findOne({ _id: id });
    if (!order) throw new NotFoundException();
    return view(order);
  }
}
decorateParameter(OrdersController, undefined, 0, Inject(ORDERS));
decorateParameter(OrdersController, 'create', 0, Body());
decorateParameter(OrdersController, 'create', 1, Headers('idempotency-key'));
decorateMethod(OrdersController, 'create', [Post(), HttpCode(201), Idempotent({ enforceIdempotency: true })]);
decorateParameter(OrdersController, 'get', 0, Param('id'));
decorateMethod(OrdersController, 'get', [Get(':id')]);
decorateClass(OrdersController, [Controller('v1/orders')]);

class HealthController {
  ready() {
    return { status: 'ok' };
  }
}
decorateMethod(HealthController, 'ready', [Get('ready')]);
decorateClass(HealthController, [Controller('health')]);

function storageOptions(kind) {
  if (kind === 'memory') return { adapter: StorageAdapterEnum.memory };
  if (kind === 'redis') return { adapter: StorageAdapterEnum.redis, options: { url: env('PEER_REDIS_URL') } };
  throw new Error(`PEER_STORAGE must be memory or redis (got ${kind})`);
}

async function main() {
  // Polling heartbeats, as our service and the twin connect: the emulator does not stream them, and the
  // driver's default (streaming) made the twin's connections churn and its requests stall on it.
  const client = new MongoClient(env('MONGODB_URI'), { serverMonitoringMode: 'poll' });
  await client.connect();
  const orders = client.db(env('MONGODB_DB_NAME')).collection(env('PEER_COLLECTION'));

  class PeerModule {}
  decorateClass(PeerModule, [
    Module({
      // The package's defaults otherwise: key header Idempotency-Key, 24 h TTL, record key method:path:key.
      imports: [NodeIdempotencyModule.forRootAsync({ storage: storageOptions(env('PEER_STORAGE')) })],
      controllers: [OrdersController, HealthController],
      providers: [{ provide: ORDERS, useValue: orders }],
    }),
  ]);

  const app = await NestFactory.create(PeerModule, new FastifyAdapter(), { logger: ['error', 'warn'] });
  await app.listen(Number(env('PORT')), process.env.HOST || '127.0.0.1');

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    app
      .close()
      .catch(() => undefined)
      .then(() => client.close())
      .finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // bench/service.ts starts a script with an IPC channel: the benchmark gone = stop.
  process.once('disconnect', stop);
}

main().catch((error) => {
  process.stderr.write(`peer (@node-idempotency/nestjs): ${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
