import { ApiProperty } from '@nestjs/swagger';

/*
 * The documented shape of terminus's 200 answer for our two checks. A check
 * that is down never answers 200: terminus throws and the problem filter
 * answers 503 `not_ready` (problem+json with `details`), so here every
 * indicator is `up` and `error` is always empty.
 */

const UP = { enum: ['up'], example: 'up' };
const EMPTY = { type: 'object', properties: {}, maxProperties: 0, selfRequired: true, description: 'Always empty in a 200' } as const;

export class ProcessIndicator {
  @ApiProperty(UP)
  status: string;

  @ApiProperty({ type: 'integer', minimum: 0, example: 42 })
  uptimeSeconds: number;
}

export class LivenessIndicators {
  @ApiProperty({ type: ProcessIndicator, description: 'The process itself: up while it answers' })
  process: ProcessIndicator;
}

export class LivenessResponse {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status: string;

  @ApiProperty({ type: LivenessIndicators, description: 'Each liveness check by name' })
  info: LivenessIndicators;

  @ApiProperty(EMPTY)
  error: Record<string, never>;

  @ApiProperty({ type: LivenessIndicators, description: 'The same indicators as `info` and `error` together' })
  details: LivenessIndicators;
}

// Public: up or down, no replica set name or reason (those are logged).
export class MongoIndicator {
  @ApiProperty(UP)
  status: string;
}

export class IndexesIndicator {
  @ApiProperty(UP)
  status: string;
}

// Never down: while the broker is unreachable creates go on and the outbox buffers; `degraded` says so.
export class EventsIndicator {
  @ApiProperty(UP)
  status: string;

  @ApiProperty({ enum: ['jetstream', 'in-process'], description: 'Where events go: NATS JetStream (NATS_URL) or the in-process bus' })
  transport: string;

  @ApiProperty({ type: 'boolean', description: 'true while events cannot reach the broker (they wait in the outbox)' })
  degraded: boolean;
}

export class ReadinessIndicators {
  @ApiProperty({ type: MongoIndicator, description: 'Reachable, with a writable primary' })
  mongodb: MongoIndicator;

  @ApiProperty({ type: IndexesIndicator, description: 'Every declared index built' })
  indexes: IndexesIndicator;

  @ApiProperty({ type: EventsIndicator, description: 'Where events go, and whether they wait (never down: the outbox buffers)' })
  events: EventsIndicator;
}

export class ReadinessResponse {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status: string;

  @ApiProperty({ type: ReadinessIndicators, description: 'Each readiness check by name: the store and its indexes' })
  info: ReadinessIndicators;

  @ApiProperty(EMPTY)
  error: Record<string, never>;

  @ApiProperty({ type: ReadinessIndicators, description: 'The same indicators as `info` and `error` together' })
  details: ReadinessIndicators;
}
