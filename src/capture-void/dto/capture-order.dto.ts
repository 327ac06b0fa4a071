import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min, ValidateIf } from 'class-validator';
import { MAX_ORDER_AMOUNT_MINOR } from '../../orders/order-amount.js';

export class CaptureOrderDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    example: 2000,
    description:
      'What to take, in minor units: at most the authorized amount; the whole authorization when absent (no body, or `{}`). ' +
      'The rest is released. `null`, or a body that is not a JSON object, is 400 `validation_failed`.',
  })
  // Not @IsOptional: it lets null through as well, and a null here used to capture the whole authorization (security
  // review SEC4-03). Only an absent amount means the whole; an explicit null is refused as not an integer.
  @ValidateIf((body: CaptureOrderDto) => body.amountMinor !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_ORDER_AMOUNT_MINOR)
  amountMinor?: number;
}
