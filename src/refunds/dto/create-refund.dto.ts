import { ApiProperty } from '@nestjs/swagger';
import { IsIn, IsInt, Max, Min } from 'class-validator';
import { MAX_ORDER_AMOUNT_MINOR } from '../../orders/order-amount.js';
import { CLIENT_REFUND_REASONS, type RefundReason } from '../refund.js';

export class CreateRefundDto {
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_ORDER_AMOUNT_MINOR,
    example: 1000,
    description: "Minor units to give back: at most what is left of the order's captured amount (partial or full)",
  })
  @IsInt()
  @Min(1)
  @Max(MAX_ORDER_AMOUNT_MINOR)
  amountMinor: number;

  @ApiProperty({ enum: CLIENT_REFUND_REASONS, example: 'requested_by_customer' })
  @IsIn(CLIENT_REFUND_REASONS)
  reason: RefundReason;
}
