/** Whole seconds until the lease expires, at least 1: what a 409 tells the client to wait. */
export function retryAfterSeconds(leaseExpiresAt: Date, now: Date): number {
  return Math.max(1, Math.ceil((leaseExpiresAt.getTime() - now.getTime()) / 1000));
}
