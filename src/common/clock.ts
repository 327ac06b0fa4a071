/** Injected wherever a test needs to move time (leases, expiry, reaper). */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}
