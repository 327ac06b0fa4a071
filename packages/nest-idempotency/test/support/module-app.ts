import type { Server } from 'node:http';
import { Test } from '@nestjs/testing';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ExpressAdapter } from '@nestjs/platform-express';
import { getConnectionToken, MongooseModule } from '@nestjs/mongoose';
import type { DynamicModule, INestApplication, Provider, Type } from '@nestjs/common';
import type { Connection } from 'mongoose';
import type { Db } from 'mongodb';
import request from 'supertest';
import { IdempotencyModule, type IdempotencyModuleExtras, type IdempotencyModuleOptions } from '../../src/index.js';

/**
 * The package's tests boot the module alone - no app of this repository -
 * on the MongoDB the root Jest run started (its globalSetup exports
 * MONGODB_URI), as a team's service would: MongooseModule.forRoot, then
 * IdempotencyModule.forRoot with its own options.
 */
export const TEST_OPTIONS: IdempotencyModuleOptions = {
  service: 'widgets-service',
  // The fixture's "auth": a tenant header. Your app reads what its guard resolved.
  tenant: (req) => (typeof req.headers['x-tenant'] === 'string' ? req.headers['x-tenant'] : undefined),
  encryption: { current: { id: 'test-key', key: Buffer.alloc(32, 7) } },
  digestKey: Buffer.alloc(32, 9),
  reaper: { enabled: false },
};

/**
 * The package's HTTP tests run once per adapter Nest ships (as @nestjs/throttler's
 * do): Express, Nest's default, and Fastify. `describe.each(ADAPTERS)` and pass the name on.
 */
export const ADAPTERS = ['express', 'fastify'] as const;
export type AdapterName = (typeof ADAPTERS)[number];

export interface ModuleApp {
  app: INestApplication;
  db: Db;
  http: () => ReturnType<typeof request>;
  close(): Promise<void>;
}

export interface ModuleAppOptions {
  dbName: string;
  /** Default fastify (tests of the protocol alone); every HTTP test runs on both. */
  adapter?: AdapterName;
  options?: Partial<IdempotencyModuleOptions>;
  extras?: IdempotencyModuleExtras;
  /** Registers the package this way instead of forRoot(TEST_OPTIONS + options + extras), e.g. forRootAsync. */
  idempotencyModule?: DynamicModule;
  imports?: (Type | DynamicModule)[];
  controllers?: Type[];
  providers?: Provider[];
}

export function mongoUri(): string {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set: run the package tests through the root `npm test` (its globalSetup starts MongoDB)');
  return uri;
}

/** Whether the run's MongoDB is the emulator (serialized transactions), as the root globalSetup reports it. */
export const onEmulator = (): boolean => process.env.TEST_MONGO_BACKEND === 'emulator';

export async function startModuleApp(config: ModuleAppOptions): Promise<ModuleApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      // As the package README recommends: no buffering (a store fault answers at once), polling heartbeats
      // (what the emulator supports; the same on a real replica set).
      MongooseModule.forRoot(mongoUri(), {
        dbName: config.dbName,
        writeConcern: { w: 'majority', j: true },
        bufferCommands: false,
        serverMonitoringMode: 'poll',
      }),
      config.idempotencyModule ?? IdempotencyModule.forRoot({ ...TEST_OPTIONS, ...config.options, ...config.extras }),
      ...(config.imports ?? []),
    ],
    controllers: config.controllers ?? [],
    providers: config.providers ?? [],
  }).compile();
  const adapter = config.adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = moduleRef.createNestApplication<INestApplication>(adapter, { logger: false });
  await app.init();
  if (adapter instanceof FastifyAdapter) await adapter.getInstance().ready();
  const db = app.get<Connection>(getConnectionToken()).db as unknown as Db;
  return { app, db, http: () => request(app.getHttpServer() as Server), close: () => app.close() };
}
