import type { ProviderSettlement } from '../payments/provider-statement.port.js';

/** The ledger's provider clearing account for one order: debits (settled to us) minus credits (refunded). */
export interface LedgerClearing {
  orderId: string;
  netMinor: number;
  currency: string;
}

export type MismatchKind = 'missing_in_ledger' | 'missing_at_provider' | 'amount_differs';
export const MISMATCH_KINDS: readonly MismatchKind[] = ['missing_in_ledger', 'missing_at_provider', 'amount_differs'];

export interface SettlementMismatch {
  kind: MismatchKind;
  chargeKey: string;
  orderId: string;
  ledgerMinor: number | null;
  providerMinor: number | null;
  ledgerCurrency: string | null;
  providerCurrency: string | null;
}

/** A difference on a key whose order has money moving (a refund, capture or void, or the create, not final yet): not a mismatch. */
export interface InFlightDifference {
  reason: string;
  chargeKey: string;
  orderId: string;
  ledgerMinor: number | null;
  providerMinor: number | null;
}

export interface SettlementReport {
  from: string;
  to: string;
  /** Charge keys compared (the provider's and the ledger's in the period, each looked up on the other side whenever it falls). */
  compared: number;
  matched: number;
  mismatches: SettlementMismatch[];
  counts: Record<MismatchKind, number>;
  /** Differences on keys with work in flight, left out of `mismatches` (the reaper finishes that work within its horizon). */
  inFlight: InFlightDifference[];
  /** Mismatches of the first read that were read again after the re-check horizon; only those still there are reported. */
  rechecked: number;
}

const chargeKeyOf = (orderId: string) => `charge:${orderId}`;
const orderIdOf = (chargeKey: string) => chargeKey.replace(/^charge:/, '');

/**
 * Pure: both sides keyed by charge key (an order's charge key is
 * `charge:<order id>`). A key with money on one side only is missing on the
 * other; on both sides with another amount or currency, it differs. A zero
 * net on both sides (charged and refunded in full) matches.
 */
export function compareSettlements(
  period: { from: Date; to: Date },
  provider: ProviderSettlement[],
  ledger: LedgerClearing[],
  inFlight: ReadonlyMap<string, string> = new Map(),
): SettlementReport {
  const atProvider = new Map(provider.map((item) => [item.chargeKey, item]));
  const inLedger = new Map(ledger.map((item) => [chargeKeyOf(item.orderId), item]));
  const keys = [...new Set([...atProvider.keys(), ...inLedger.keys()])].sort();
  const mismatches: SettlementMismatch[] = [];
  const moving: InFlightDifference[] = [];
  for (const chargeKey of keys) {
    const theirs = atProvider.get(chargeKey);
    const ours = inLedger.get(chargeKey);
    const providerMinor = theirs?.netMinor ?? 0;
    const ledgerMinor = ours?.netMinor ?? 0;
    let kind: MismatchKind | null = null;
    if (providerMinor !== 0 && ledgerMinor === 0) kind = 'missing_in_ledger';
    else if (ledgerMinor !== 0 && providerMinor === 0) kind = 'missing_at_provider';
    else if (providerMinor !== ledgerMinor || (theirs && ours && theirs.currency !== ours.currency)) kind = 'amount_differs';
    if (!kind) continue;
    const reason = inFlight.get(orderIdOf(chargeKey));
    if (reason) {
      moving.push({
        reason,
        chargeKey,
        orderId: orderIdOf(chargeKey),
        ledgerMinor: ours ? ours.netMinor : null,
        providerMinor: theirs ? theirs.netMinor : null,
      });
      continue;
    }
    mismatches.push({
      kind,
      chargeKey,
      orderId: orderIdOf(chargeKey),
      ledgerMinor: ours ? ours.netMinor : null,
      providerMinor: theirs ? theirs.netMinor : null,
      ledgerCurrency: ours?.currency ?? null,
      providerCurrency: theirs?.currency ?? null,
    });
  }
  return {
    from: period.from.toISOString(),
    to: period.to.toISOString(),
    compared: keys.length,
    matched: keys.length - mismatches.length - moving.length,
    mismatches,
    counts: countByKind(mismatches),
    inFlight: moving,
    rechecked: 0,
  };
}

export function countByKind(mismatches: SettlementMismatch[]): Record<MismatchKind, number> {
  return Object.fromEntries(MISMATCH_KINDS.map((kind) => [kind, mismatches.filter((m) => m.kind === kind).length])) as Record<
    MismatchKind,
    number
  >;
}

/**
 * Pure: the first read's report with its mismatches read again (`second`,
 * over those keys only): a mismatch is reported only if the second read
 * still finds one; a key now in flight joins `inFlight`; the rest matched.
 */
export function afterRecheck(first: SettlementReport, second: SettlementReport): SettlementReport {
  const inFlight = [...first.inFlight, ...second.inFlight];
  return {
    ...first,
    matched: first.compared - second.mismatches.length - inFlight.length,
    mismatches: second.mismatches,
    counts: countByKind(second.mismatches),
    inFlight,
    rechecked: first.mismatches.length,
  };
}

/** Net clearing per order from journal lines on the clearing account. */
export function netClearing(
  lines: { orderId: string; direction: 'debit' | 'credit'; amountMinor: number; currency: string }[],
): LedgerClearing[] {
  const byOrder = new Map<string, LedgerClearing>();
  for (const line of lines) {
    const item = byOrder.get(line.orderId) ?? { orderId: line.orderId, netMinor: 0, currency: line.currency };
    item.netMinor += line.direction === 'debit' ? line.amountMinor : -line.amountMinor;
    if (item.currency !== line.currency) item.currency = `${item.currency}+${line.currency}`;
    byOrder.set(line.orderId, item);
  }
  return [...byOrder.values()];
}
