import type { ProviderSettlement } from './settlement-compare.js';

/**
 * The provider's side of the books: what it settled to us, as its
 * statement (or reporting API) lists it. Settled means a charge that
 * succeeded (net of its refunds); processing, declined and canceled charges
 * moved no money.
 */
export abstract class ProviderStatement {
  /** Charges settled in [from, to). */
  abstract settledBetween(from: Date, to: Date): Promise<ProviderSettlement[]>;
  /** These charge keys' settlements, whenever they fell (the other side of a ledger line near the period's edge). */
  abstract settledForKeys(chargeKeys: string[]): Promise<ProviderSettlement[]>;
}
