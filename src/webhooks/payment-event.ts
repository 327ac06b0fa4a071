import { WebhookEventInvalidError } from './webhooks.errors.js';

/** The event types the service acts on; any other type is recorded and acknowledged. */
export const PAYMENT_EVENT_TYPES = ['charge.processing', 'charge.succeeded', 'charge.failed'] as const;
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

/**
 * A provider event as the webhook body carries it (Standard Webhooks'
 * `{ type, timestamp, data }`). `data.sequence` counts the charge's own
 * events at the provider (1 for processing, 2 for the outcome), so an event
 * that arrives after a later one of the same charge is known to be stale.
 */
export interface PaymentEvent {
  /** webhook-id: the same on every delivery of this event. */
  id: string;
  type: string;
  occurredAt: Date;
  /** Null for a type the service does not know (its data is not read). */
  charge: ChargeEventData | null;
  /** `refund.failed` only (REFUND_FAILED_EVENT): the refund the provider failed after it had succeeded. */
  refund?: RefundEventData | null;
}

/**
 * A refund the provider reported done that failed afterwards (a card
 * refund can: the card was closed, the issuer sent the money back). The
 * money is back with the merchant, so it moves our books
 * (refunds/refund-failure.ts). Named by our refund key, which the provider
 * keeps with the refund.
 */
export const REFUND_FAILED_EVENT = 'refund.failed';

export interface RefundEventData {
  /** Our provider key of the refund (`refund:re_<24 hex>`). */
  refundKey: string;
  /** The provider's id of the refund. */
  providerRefundId: string;
  amountMinor: number;
  currency: string;
  /** The provider's reason (e.g. expired_or_canceled_card); recorded, never shown as ours. */
  failureReason: string;
}

export interface ChargeEventData {
  chargeKey: string;
  chargeId: string;
  amountMinor: number;
  currency: string;
  sequence: number;
  /** charge.failed only: the provider's reason (e.g. card_declined). */
  failureReason: string | null;
}

const CHARGE_KEY = /^charge:ord_[0-9a-f]{24}$/;
const CHARGE_ID = /^ch_[A-Za-z0-9]{1,64}$/;
const REFUND_KEY = /^refund:re_[0-9a-f]{24}$/;
const PROVIDER_ID = /^[A-Za-z0-9_]{1,64}$/;
const TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const REASON = /^[a-z][a-z0-9_]{0,63}$/;

export function isPaymentEventType(type: string): type is PaymentEventType {
  return (PAYMENT_EVENT_TYPES as readonly string[]).includes(type);
}

/** Reads the parsed body of a verified delivery; anything off its documented shape is a 400 that writes nothing. */
export function readPaymentEvent(id: string, document: unknown): PaymentEvent {
  const body = asObject(document, 'the body must be a JSON object');
  if (typeof body.type !== 'string' || !TYPE.test(body.type) || body.type.length > 64) {
    throw new WebhookEventInvalidError('`type` must be a dotted lowercase name such as charge.succeeded');
  }
  const occurredAt = typeof body.timestamp === 'string' ? new Date(body.timestamp) : new Date(Number.NaN);
  if (Number.isNaN(occurredAt.getTime())) throw new WebhookEventInvalidError('`timestamp` must be an ISO 8601 date-time');
  if (body.type === REFUND_FAILED_EVENT) {
    return { id, type: body.type, occurredAt, charge: null, refund: readRefund(asObject(body.data, '`data` must be an object')) };
  }
  if (!isPaymentEventType(body.type)) return { id, type: body.type, occurredAt, charge: null };
  return { id, type: body.type, occurredAt, charge: readCharge(body.type, asObject(body.data, '`data` must be an object')) };
}

function readCharge(type: PaymentEventType, data: Record<string, unknown>): ChargeEventData {
  const { chargeKey, chargeId, amountMinor, currency, sequence, failureReason } = data;
  if (typeof chargeKey !== 'string' || !CHARGE_KEY.test(chargeKey))
    throw new WebhookEventInvalidError('`data.chargeKey` is not a charge key');
  if (typeof chargeId !== 'string' || !CHARGE_ID.test(chargeId)) throw new WebhookEventInvalidError('`data.chargeId` is not a charge id');
  if (!Number.isSafeInteger(amountMinor) || (amountMinor as number) <= 0) {
    throw new WebhookEventInvalidError('`data.amountMinor` must be a positive integer');
  }
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw new WebhookEventInvalidError('`data.currency` must be ISO 4217');
  if (!Number.isSafeInteger(sequence) || (sequence as number) < 1) {
    throw new WebhookEventInvalidError('`data.sequence` must be a positive integer');
  }
  const reason = type === 'charge.failed' ? failureReason : null;
  if (type === 'charge.failed' && (typeof reason !== 'string' || !REASON.test(reason))) {
    throw new WebhookEventInvalidError('`data.failureReason` is required on charge.failed');
  }
  return {
    chargeKey,
    chargeId,
    amountMinor: amountMinor as number,
    currency,
    sequence: sequence as number,
    failureReason: (reason as string | null) ?? null,
  };
}

function readRefund(data: Record<string, unknown>): RefundEventData {
  const { refundKey, providerRefundId, amountMinor, currency, failureReason } = data;
  if (typeof refundKey !== 'string' || !REFUND_KEY.test(refundKey))
    throw new WebhookEventInvalidError('`data.refundKey` is not a refund key');
  if (typeof providerRefundId !== 'string' || !PROVIDER_ID.test(providerRefundId)) {
    throw new WebhookEventInvalidError('`data.providerRefundId` is not a refund id');
  }
  if (!Number.isSafeInteger(amountMinor) || (amountMinor as number) <= 0) {
    throw new WebhookEventInvalidError('`data.amountMinor` must be a positive integer');
  }
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw new WebhookEventInvalidError('`data.currency` must be ISO 4217');
  if (typeof failureReason !== 'string' || !REASON.test(failureReason)) {
    throw new WebhookEventInvalidError('`data.failureReason` is required on refund.failed');
  }
  return { refundKey, providerRefundId, amountMinor: amountMinor as number, currency, failureReason };
}

function asObject(value: unknown, message: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new WebhookEventInvalidError(message);
  return value as Record<string, unknown>;
}
