import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { EVENT_TYPE_PATTERN } from './create-webhook-endpoint.dto.js';

export class UpdateWebhookEndpointDto {
  @ApiPropertyOptional({ example: 'https://merchant.example/webhooks/v2', maxLength: 2048 })
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({ type: [String], example: ['order.completed'] })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @Matches(EVENT_TYPE_PATTERN, { each: true, message: 'each event is a type such as order.completed, or *' })
  events?: string[];

  @ApiPropertyOptional({ description: 'false disables the endpoint; true enables it again (and forgets that it was failing)' })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}
