/**
 * The one envelope every transport carries (the broker's stream, the
 * in-process bus, outgoing webhooks): CloudEvents 1.0, structured JSON mode.
 * `docs/asyncapi.yaml` is its contract for consumers.
 */
export interface CloudEvent {
  specversion: '1.0';
  /** The event id: also `Nats-Msg-Id` and `webhook-id`. Consumers deduplicate on it. */
  id: string;
  /** Who emitted it: a URI reference naming this service. */
  source: string;
  /** e.g. `order.completed`. */
  type: string;
  /** The aggregate the event is about (orders: the order id). */
  subject: string;
  /** When the change committed (RFC 3339). */
  time: string;
  datacontenttype: 'application/json';
  /** Extension: the tenant the event belongs to. */
  tenant: string;
  /** Extension: the version of `data`'s shape for this `type`, from 1. */
  schemaversion: number;
  /**
   * Extension (CloudEvents' `sequence` extension, a String): the event's
   * position among its subject's events, in commit order, decimal from "1".
   * Absent on events written before sequences existed.
   */
  sequence?: string;
  data: Record<string, unknown>;
}

/** The source every event of this service carries. */
export const EVENT_SOURCE = '/idempotent-orders';

/**
 * What the envelope is made from: PublishedEvent's fields, spelled out here
 * so that event-publisher.port.ts (which imports toCloudEvent) is not
 * imported back (src/architecture.spec.ts: no import circles).
 */
export interface CloudEventInput {
  id: string;
  type: string;
  tenant: string;
  aggregateId: string;
  schemaVersion: number;
  sequence?: number;
  payload: Record<string, unknown>;
  occurredAt: string;
}

export function toCloudEvent(event: CloudEventInput, source: string = EVENT_SOURCE): CloudEvent {
  return {
    specversion: '1.0',
    id: event.id,
    source,
    type: event.type,
    subject: event.aggregateId,
    time: event.occurredAt,
    datacontenttype: 'application/json',
    tenant: event.tenant,
    schemaversion: event.schemaVersion,
    ...(event.sequence === undefined ? {} : { sequence: String(event.sequence) }),
    data: event.payload,
  };
}
