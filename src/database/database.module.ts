import { Global, Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { mongoConfig, type MongoConfig } from '../config/config.tokens.js';
import { Clock } from '../common/clock.js';
import { DatabaseBootstrap } from './database.bootstrap.js';
import { ServerClock } from './server-clock.js';

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
          // Fail fast instead of queueing or hanging: every step of a store call is
          // bounded - finding a server, opening a connection, waiting for a pooled
          // one, and waiting for a reply (a frozen server accepts TCP and never
          // answers; the driver's `timeoutMS` is a no-op in 7.x) - so a store
          // that is down or frozen answers 503 in seconds.
          bufferCommands: false,
          serverSelectionTimeoutMS: config.serverSelectionTimeoutMs,
          connectTimeoutMS: config.connectTimeoutMs,
          socketTimeoutMS: config.socketTimeoutMs,
          waitQueueTimeoutMS: config.poolWaitTimeoutMs,
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
  providers: [DatabaseBootstrap, { provide: Clock, useClass: ServerClock }],
  exports: [DatabaseBootstrap, Clock],
})
export class DatabaseModule {}
