import { ApiProperty } from '@nestjs/swagger';

/** How many documents the erasure changed, per kind. */
export class ErasureCountsResponse {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Orders now carrying a pseudonym instead of the customer id' })
  orders: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Stored responses erased: replaying their keys answers 410 `response_erased`' })
  idempotencyRecords: number;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Outbox events now carrying the pseudonym' })
  outboxEvents: number;
}

/** The documented shape of what ErasureController.erase returns. */
export class ErasureResponse {
  @ApiProperty({
    example: 'era_5b0e7c52-1f4d-4a53-a3a4-2b9e8f1c6d70',
    description: 'Id of the audit record (which does not name the customer)',
  })
  erasureId: string;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'When the erasure committed' })
  erasedAt: string;

  @ApiProperty({ type: ErasureCountsResponse, description: 'What was erased or pseudonymized, by kind' })
  counts: ErasureCountsResponse;
}
