import { ApiProperty } from '@nestjs/swagger';

/** The documented shape of InboxReceipt (webhook-inbox.service.ts): what a 200 tells the provider. */
export class WebhookReceiptResponse {
  @ApiProperty({ example: 'msg_2b7f9a', description: 'The webhook-id of the delivery' })
  eventId: string;

  @ApiProperty({ description: '`true` when this event was received before: this delivery changed nothing' })
  duplicate: boolean;

  @ApiProperty({
    enum: ['applied', 'ignored', 'unknown_type'],
    description:
      '`applied`: the event moved an order on. `ignored`: it changed nothing (see `reason`). `unknown_type`: recorded, not acted on',
  })
  outcome: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: ['unknown_order', 'already_final', 'no_change', 'amount_mismatch', 'conflicting_outcome', 'stale', null],
    description: 'Why an ignored event changed nothing; null otherwise',
  })
  reason: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 'ord_65f1c2a9b7e4d3f2a1b0c9d8',
    description: 'The order the event is about, if ours',
  })
  orderId: string | null;
}
