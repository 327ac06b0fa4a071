import { Schema } from 'mongoose';
import type { LedgerEntry } from '../ledger-entry.js';

export const LEDGER_ENTRY_MODEL = 'LedgerEntry';

export const LedgerEntrySchema = new Schema<LedgerEntry>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    journalId: { type: String, required: true },
    orderId: { type: String, required: true },
    line: { type: Number, required: true },
    account: { type: String, required: true },
    direction: { type: String, enum: ['debit', 'credit'], required: true },
    amountMinor: { type: Number, required: true },
    currency: { type: String, required: true },
    postedAt: { type: Date, required: true },
  },
  { collection: 'ledger_entries', versionKey: false, strict: 'throw' },
);

LedgerEntrySchema.index({ tenant: 1, orderId: 1, line: 1 }, { name: 'tenant_order' });
