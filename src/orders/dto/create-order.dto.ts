import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CAPTURE_MODES, type CaptureMode } from '../order.js';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsISO4217CurrencyCode,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';

const ID_PATTERN = /^[A-Za-z0-9_-]+$/;

export class OrderItemDto {
  @ApiProperty({ example: 'sku_1', maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(ID_PATTERN, { message: 'sku may contain letters, digits, _ and - only' })
  sku: string;

  @ApiProperty({ example: 2, minimum: 1, maximum: 10000 })
  @IsInt()
  @Min(1)
  @Max(10_000)
  quantity: number;

  @ApiProperty({ example: 1250, minimum: 0, description: 'Unit price in minor units (cents)' })
  @IsInt()
  @Min(0)
  @Max(100_000_000_000)
  unitPriceMinor: number;
}

export class PaymentMethodDto {
  @ApiProperty({ example: 'tok_visa', description: 'tok_visa succeeds, tok_decline declines, tok_provider_down is a provider outage' })
  @IsString()
  @Length(1, 64)
  @Matches(/^tok_[A-Za-z0-9_]+$/, { message: 'token must look like tok_...' })
  token: string;
}

export class CreateOrderDto {
  @ApiProperty({ example: 'cus_123', maxLength: 64 })
  @IsString()
  @Length(1, 64)
  @Matches(ID_PATTERN, { message: 'customerId may contain letters, digits, _ and - only' })
  customerId: string;

  @ApiProperty({ example: 'USD', description: 'ISO 4217 currency code' })
  @IsString()
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be three upper-case letters' })
  @IsISO4217CurrencyCode()
  currency: string;

  @ApiProperty({
    type: [OrderItemDto],
    minItems: 1,
    maxItems: 100,
    description: 'What is bought; the server computes the total from these',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => OrderItemDto)
  items: OrderItemDto[];

  @ApiProperty({ type: PaymentMethodDto, description: 'How to pay: a token from the provider; it decides sync or async settlement' })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => PaymentMethodDto)
  paymentMethod: PaymentMethodDto;

  @ApiPropertyOptional({
    enum: CAPTURE_MODES,
    default: 'automatic',
    description:
      '`automatic`: charged at once (201 `saved`). `manual`: the provider only authorizes (201 `authorized`); POST /v1/orders/{id}/capture or /void follows before `authorizationExpiresAt`',
  })
  @IsOptional()
  @IsIn(CAPTURE_MODES)
  capture?: CaptureMode;
}
