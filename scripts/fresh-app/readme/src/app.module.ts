import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyModule, IdempotencyProblemFilter } from '@idempotent-orders/nest-idempotency';
import { NotesController } from './notes.controller.js';

const base64Key = (name: string) => Buffer.from(process.env[name] ?? '', 'base64'); // 32 bytes each: openssl rand -base64 32

@Module({
  imports: [
    MongooseModule.forRoot(process.env.MONGODB_URI!, { bufferCommands: false }),
    IdempotencyModule.forRoot({
      service: 'notes', // part of every record id: never rename
      tenant: (req) => (req as { tenant?: string }).tenant, // set by your auth guard (here ApiKeyGuard)
      encryption: { current: { id: 'k1', key: base64Key('IDEM_ENCRYPTION_KEY') } },
      digestKey: base64Key('IDEM_DIGEST_KEY'),
    }),
  ],
  controllers: [NotesController],
  providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
})
export class AppModule {}
