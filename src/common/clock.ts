/**
 * "Now" for leases, expiry and the reaper. Production binds the server's
 * clock (database/server-clock.ts); tests may bind one they can move.
 */
export abstract class Clock {
  abstract now(): Date;
}
