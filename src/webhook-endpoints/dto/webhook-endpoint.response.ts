import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/* The documented shapes of webhook-endpoint.view.ts; the e2e tests check real bodies against them. */
export class WebhookEndpointResponse {
  @ApiProperty({ example: 'we_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^we_[0-9a-f]{24}$' })
  id: string;

  @ApiProperty({ example: 'https://merchant.example/webhooks' })
  url: string;

  @ApiProperty({ type: [String], example: ['order.completed'] })
  events: string[];

  @ApiProperty({ type: 'string', nullable: true, example: 'Fulfilment' })
  description: string | null;

  @ApiProperty({ enum: ['enabled', 'disabled'], example: 'enabled', description: 'Only enabled endpoints get deliveries' })
  status: string;

  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: ['manual', 'failing', null],
    description: '`failing`: every attempt failed for 5 days, so deliveries stopped; PATCH `enabled: true` to resume',
  })
  disabledReason: string | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When it was disabled; null while enabled',
  })
  disabledAt: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', example: '2026-12-04T15:41:33.807Z' })
  createdAt: string;
}

export class CreatedWebhookEndpointResponse extends WebhookEndpointResponse {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'Signing secret: `whsec_` + base64 of 32 bytes. Shown here only.',
  })
  secret: string;
}

export class WebhookEndpointListResponse {
  @ApiProperty({ type: [WebhookEndpointResponse], description: 'Your endpoints, newest first (at most 100)' })
  data: WebhookEndpointResponse[];
}

export class RotatedSecretResponse {
  @ApiProperty({ example: 'we_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^we_[0-9a-f]{24}$' })
  id: string;

  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The new secret; the previous one still signs for 24 hours',
  })
  secret: string;

  @ApiProperty({ type: 'string', format: 'date-time', description: 'Until when the previous secret still signs' })
  previousSecretExpiresAt: string;
}

export class DeliveryAttemptResponse {
  @ApiProperty({ type: 'string', format: 'date-time', example: '2026-12-04T15:41:34.012Z', description: 'When the attempt started' })
  at: string;

  @ApiProperty({ type: 'integer', nullable: true, example: 200, description: 'null when no answer came' })
  httpStatus: number | null;

  @ApiProperty({ type: 'integer', example: 42 })
  durationMs: number;

  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: ['timeout', 'connection_error', 'address_refused', 'endpoint_gone', 'secret_unavailable', null],
    example: null,
    description:
      'Why no answer came (null when one did): cut at the timeout, no connection, an address never reached, the endpoint deleted or disabled',
  })
  error: string | null;
}

export class WebhookDeliveryResponse {
  @ApiProperty({ example: 'evt_ord_65f1c2a9b7e4d3f2a1b0c9d8_completed', description: 'The event id, sent as `webhook-id`' })
  eventId: string;

  @ApiProperty({ example: 'order.completed' })
  eventType: string;

  @ApiProperty({
    enum: ['pending', 'succeeded', 'failed'],
    example: 'succeeded',
    description: '`failed` after the last attempt of the schedule (retry it by hand)',
  })
  status: string;

  @ApiProperty({ type: [DeliveryAttemptResponse], description: 'Every attempt, oldest first' })
  attempts: DeliveryAttemptResponse[];

  @ApiPropertyOptional({ type: 'string', format: 'date-time', nullable: true, description: 'When the next attempt is due (pending only)' })
  nextAttemptAt: string | null;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    example: '2026-12-04T15:41:33.900Z',
    description: 'When the event was recorded for this endpoint',
  })
  createdAt: string;
}

export class WebhookDeliveryListResponse {
  @ApiProperty({ type: [WebhookDeliveryResponse], description: "The endpoint's deliveries, newest first" })
  data: WebhookDeliveryResponse[];

  @ApiProperty({ type: 'string', nullable: true, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

export class DeletedWebhookEndpointResponse {
  @ApiProperty({ example: 'we_65f1c2a9b7e4d3f2a1b0c9d8', pattern: '^we_[0-9a-f]{24}$' })
  id: string;

  @ApiProperty({ enum: [true], example: true })
  deleted: boolean;
}

export class RetriedDeliveryResponse {
  @ApiProperty({ example: 'evt_ord_65f1c2a9b7e4d3f2a1b0c9d8_completed', description: 'The event id, sent again as `webhook-id`' })
  eventId: string;

  @ApiProperty({ enum: ['pending'], example: 'pending' })
  status: string;
}
