import type { CloudEvent } from '../outbox/cloud-event.js';

/** A secret as stored: sealed (AES-256-GCM, the stored responses' keys), never in clear. */
export interface SealedSecret {
  keyId: string;
  iv: Buffer;
  tag: Buffer;
  data: Buffer;
}

export interface EndpointSecret {
  sealed: SealedSecret;
  createdAt: Date;
  /** null: the current secret. A rotated-out secret still signs until then (24 h). */
  expiresAt: Date | null;
}

export const ENDPOINT_STATUSES = ['enabled', 'disabled'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

export interface WebhookEndpoint {
  /** `we_` + 24 hex digits. */
  _id: string;
  tenant: string;
  url: string;
  /** Event types it is subscribed to (`order.completed`), or `*` for every type. */
  events: string[];
  description: string | null;
  status: EndpointStatus;
  /** Why it is disabled: `manual` (PATCH enabled: false) or `failing` (every attempt failed for the configured days). */
  disabledReason: 'manual' | 'failing' | null;
  disabledAt: Date | null;
  /** The first failed attempt since the last success: an endpoint failing since too long ago is disabled. */
  failingSince: Date | null;
  secrets: EndpointSecret[];
  createdAt: Date;
  updatedAt: Date;
}

export const ENDPOINT_ID_PATTERN = /^we_[0-9a-f]{24}$/;
export const ALL_EVENTS = '*';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryAttempt {
  at: Date;
  /** The answer's HTTP status; null when there was none (timeout, connection refused, address refused). */
  httpStatus: number | null;
  durationMs: number;
  /** Why it failed without an answer: `timeout`, `connection_error`, `address_refused`, `endpoint_gone`, `secret_unavailable`. */
  error: string | null;
}

/** One event for one endpoint: `_id` = `<event id>:<endpoint id>`, so a redelivered event creates nothing new. */
export interface WebhookDelivery {
  _id: string;
  tenant: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The exact body every attempt sends (the CloudEvents envelope), so each repeat is byte for byte the same. */
  payload: string;
  /**
   * The keyed digest of the customer the body names (SubjectDigests), '' when it names none or a pseudonym:
   * how an erasure finds the deliveries to rewrite. Absent on deliveries recorded before it existed.
   */
  subject?: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  /** Index into the retry schedule of the next attempt (a manual retry starts it again). */
  scheduleIndex: number;
  nextAttemptAt: Date | null;
  /** The worker sending it now; a lease past `until` is taken over (a worker died mid-attempt). */
  lease: { owner: string; until: Date } | null;
  /** A manual retry asked for and not yet taken by a claim (an attempt in flight then leaves the delivery due, not ended). */
  retryRequested?: boolean;
  /** When the store removes it (a TTL index): its last attempt plus the retention once it ended; null while pending. */
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export function deliveryId(eventId: string, endpointId: string): string {
  return `${eventId}:${endpointId}`;
}

export function deliveryPayload(event: CloudEvent): string {
  return JSON.stringify(event);
}

/** Whether an endpoint subscribed to `events` wants an event of type `type`. */
export function subscribes(events: string[], type: string): boolean {
  return events.includes(ALL_EVENTS) || events.includes(type);
}
