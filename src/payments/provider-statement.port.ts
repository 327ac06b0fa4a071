/** One charge as the provider's statement shows it: what it settled to us under a charge key, net of refunds. */
export interface ProviderSettlement {
  chargeKey: string;
  chargeId: string;
  netMinor: number;
  currency: string;
  at: Date;
}

/**
 * The provider's side of the books: what it settled to us, as its
 * statement (or reporting API: Stripe's balance transactions) lists it.
 * Settled means money taken, net of its refunds:
 *  - a charge that succeeded (automatic capture, or an asynchronous charge
 *    once it settled), for its amount, at when it succeeded or settled;
 *  - a captured authorization (manual capture), for the amount captured -
 *    not the amount authorized - at its capture time.
 * Authorizations not captured (held, voided, lapsed), processing, declined
 * and canceled charges moved no money and are not listed.
 */
export abstract class ProviderStatement {
  /** Charges and captures settled in [from, to). */
  abstract settledBetween(from: Date, to: Date): Promise<ProviderSettlement[]>;
  /** These charge keys' settlements, whenever they fell (the other side of a ledger line near the period's edge). */
  abstract settledForKeys(chargeKeys: string[]): Promise<ProviderSettlement[]>;
}
