import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyModule, IdempotencyProblemFilter } from '@idempotent-orders/nest-idempotency';
import type { AppConfig } from './config.js';
import { NotesController } from './notes.controller.js';

@Module({})
export class AppModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        MongooseModule.forRoot(config.mongoUri, {
          dbName: config.dbName,
          writeConcern: { w: 'majority', j: true },
          bufferCommands: false,
          serverMonitoringMode: 'poll',
        }),
        IdempotencyModule.forRoot({
          service: 'notes-service',
          // This app's "authentication": a tenant header (a real one reads what its guard resolved).
          tenant: (request) => {
            const tenant = request.headers['x-tenant'];
            return typeof tenant === 'string' && tenant.length > 0 ? tenant : undefined;
          },
          encryption: { current: { id: 'notes-2026', key: config.encryptionKey } },
          digestKey: config.digestKey,
        }),
      ],
      controllers: [NotesController],
      providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
    };
  }
}
