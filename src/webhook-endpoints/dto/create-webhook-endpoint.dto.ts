import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsOptional, IsString, Matches, MaxLength } from 'class-validator';

/** An event type (`order.completed`) or `*` for every type. */
export const EVENT_TYPE_PATTERN = /^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+)$/;

export class CreateWebhookEndpointDto {
  @ApiProperty({
    example: 'https://merchant.example/webhooks',
    maxLength: 2048,
    description: 'https in production; never a private address',
  })
  @IsString()
  @MaxLength(2048)
  url: string;

  @ApiProperty({ type: [String], example: ['order.completed', 'order.refunded'], description: 'Event types, or `*` for all' })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @Matches(EVENT_TYPE_PATTERN, { each: true, message: 'each event is a type such as order.completed, or *' })
  events: string[];

  @ApiPropertyOptional({ maxLength: 500, example: 'Fulfilment' })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  description?: string;
}
