import { ApiProperty } from '@nestjs/swagger';
import { ACCOUNTS, type Direction } from '../../ledger/journal.js';

// Exhaustive over the Direction type: a new direction that is not documented here does not compile.
const DIRECTIONS: Record<Direction, true> = { debit: true, credit: true };

/** The documented shape of one line of ledgerView() (order.view.ts). */
export class LedgerEntryResponse {
  @ApiProperty({ example: 'jrn_ord_65f1c2a9b7e4d3f2a1b0c9d8', description: 'The journal this line belongs to; its lines sum to zero' })
  journalId: string;

  @ApiProperty({ enum: Object.values(ACCOUNTS), example: ACCOUNTS.receivable })
  account: string;

  @ApiProperty({ enum: Object.keys(DIRECTIONS), example: 'debit' })
  direction: string;

  @ApiProperty({ type: 'integer', minimum: 1, example: 2500, description: 'Minor units; the direction gives the sign' })
  amountMinor: number;

  @ApiProperty({ example: 'USD', pattern: '^[A-Z]{3}$' })
  currency: string;
}

export class OrderLedgerResponse {
  @ApiProperty({
    type: [LedgerEntryResponse],
    description: 'Empty until the order is saved; a saved order has one balanced journal of four lines',
  })
  entries: LedgerEntryResponse[];
}
