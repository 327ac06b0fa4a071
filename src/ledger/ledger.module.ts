import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { LedgerEntryRepository } from './ledger-entry.repository.js';
import { LedgerService } from './ledger.service.js';
import { LedgerEntrySchema, LEDGER_ENTRY_MODEL } from './schemas/ledger-entry.schema.js';

@Module({
  imports: [MongooseModule.forFeature([{ name: LEDGER_ENTRY_MODEL, schema: LedgerEntrySchema }])],
  providers: [LedgerEntryRepository, LedgerService],
  exports: [LedgerService],
})
export class LedgerModule {}
