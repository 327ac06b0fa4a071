import type { ProviderEvent } from './webhook-sender.js';

/** The simulator's view of a charge, as much of it as its events carry. */
export interface ChargeFacts {
  chargeKey: string;
  chargeId: string;
  amountMinor: number;
  currency: string;
}

/** A charge's events in the order the provider makes them: processing first, then its one outcome. */
const SEQUENCE = { 'charge.processing': 1, 'charge.succeeded': 2, 'charge.failed': 2 } as const;
export type ChargeEventType = keyof typeof SEQUENCE;

/**
 * One provider event about a charge. The id is derived from the charge and
 * the fact (`evt_<charge id>_processing|succeeded|failed`), so the same fact
 * is always the same event however often the provider emits it - the
 * receiver's inbox deduplicates on it - and two facts never share an id.
 */
export function chargeEvent(type: ChargeEventType, facts: ChargeFacts, at: Date, failureReason?: string): ProviderEvent {
  const sequence = SEQUENCE[type];
  return {
    id: `evt_${facts.chargeId}_${type.slice('charge.'.length)}`,
    type,
    timestamp: at,
    data: {
      chargeKey: facts.chargeKey,
      chargeId: facts.chargeId,
      amountMinor: facts.amountMinor,
      currency: facts.currency,
      sequence,
      ...(type === 'charge.failed' ? { failureReason: failureReason ?? 'card_declined' } : {}),
    },
  };
}
