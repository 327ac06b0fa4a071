import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { MAX_ORDER_AMOUNT_MINOR } from '../order-amount.js';

export class CaptureOrderDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    example: 2000,
    description: 'What to take, in minor units: at most the authorized amount; the whole authorization when absent. The rest is released.',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_ORDER_AMOUNT_MINOR)
  amountMinor?: number;
}
