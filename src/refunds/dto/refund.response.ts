import { ApiProperty } from '@nestjs/swagger';
import { REFUND_FAILURE, REFUND_REASONS, REFUND_STATES } from '../refund.js';

/*
 * The documented shape of refundView() (refund.view.ts). Only describes:
 * the e2e tests validate real bodies against it with unknown fields refused.
 */
export class RefundResponse {
  @ApiProperty({ example: 're_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^re_[0-9a-f]{24}$' })
  id: string;

  @ApiProperty({ example: 'ord_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^ord_[0-9a-f]{24}$' })
  orderId: string;

  @ApiProperty({
    enum: REFUND_STATES,
    example: 'succeeded',
    description: 'A 201 is `succeeded`; `pending` is seen only while the provider is asked; `failed` in the list only',
  })
  state: string;

  @ApiProperty({ type: 'integer', minimum: 1, example: 1000, description: 'Minor units given back' })
  amountMinor: number;

  @ApiProperty({ example: 'USD', pattern: '^[A-Z]{3}$', description: "The order's currency" })
  currency: string;

  @ApiProperty({ enum: REFUND_REASONS, example: 'requested_by_customer' })
  reason: string;

  // null is listed in the enum too: OpenAPI 3.0.3 says `nullable` does not widen an `enum`.
  @ApiProperty({
    enum: [...Object.values(REFUND_FAILURE), null],
    nullable: true,
    example: null,
    description: 'Why a `failed` refund failed (the provider refused, or `abandoned`: nothing was refunded); null otherwise',
  })
  failureReason: string | null;

  @ApiProperty({
    type: 'string',
    nullable: true,
    example: 're_0f2a9c4b7d1e4e8a9b3c5d6e7f8a9b0c',
    description: "The provider's refund id, once it succeeded",
  })
  providerRefundId: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'When the refund was requested (its key claimed)' })
  createdAt: string;
}

export class RefundListResponse {
  @ApiProperty({ type: [RefundResponse], description: "The order's refunds, oldest first, in every state" })
  data: RefundResponse[];
}
