import { Global, Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { mongoConfig, type MongoConfig } from '../config/config.tokens.js';
import { Clock } from '../common/clock.js';
import { DatabaseBootstrap } from './database.bootstrap.js';
import { ServerClock } from './server-clock.js';
import { TransactionRunner } from './transaction.runner.js';

@Global()
@Module({
  imports: [
    MongooseModule.forRootAsync({
      inject: [mongoConfig.KEY],
      useFactory: (config: MongoConfig) => {
        if (!config.uri) throw new Error('MONGODB_URI is not set (main.ts starts an embedded replica set when it is missing)');
        return {
          uri: config.uri,
          dbName: config.dbName,
          // Fail fast instead of queueing: an unreachable store answers 503 in
          // seconds rather than hanging requests.
          bufferCommands: false,
          serverSelectionTimeoutMS: config.serverSelectionTimeoutMs,
          // Indexes and collections are created explicitly at boot (DatabaseBootstrap).
          autoIndex: false,
          autoCreate: false,
          // Polling heartbeats: the same on a real replica set, and what the emulator supports.
          serverMonitoringMode: 'poll' as const,
          writeConcern: { w: 'majority' as const, j: true },
          retryWrites: true,
          retryReads: true,
        };
      },
    }),
  ],
  // Clock lives here because it reads the server's: one time for every instance.
  providers: [TransactionRunner, DatabaseBootstrap, { provide: Clock, useClass: ServerClock }],
  exports: [TransactionRunner, DatabaseBootstrap, Clock],
})
export class DatabaseModule {}
