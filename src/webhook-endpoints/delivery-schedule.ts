import type { DeliveryStatus } from './webhook-endpoint.js';

export interface NextState {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  scheduleIndex: number;
}

/**
 * Where a delivery goes after an attempt. `scheduleIndex` is the attempt
 * just made's place in the schedule; the next waits the next delay. After
 * the last delay's attempt fails the delivery is `failed` (a manual retry
 * starts the schedule again).
 */
export function afterAttempt(scheduleIndex: number, succeeded: boolean, schedule: readonly number[], now: Date): NextState {
  if (succeeded) return { status: 'succeeded', nextAttemptAt: null, scheduleIndex };
  const next = scheduleIndex + 1;
  if (next >= schedule.length) return { status: 'failed', nextAttemptAt: null, scheduleIndex };
  return { status: 'pending', nextAttemptAt: new Date(now.getTime() + schedule[next]), scheduleIndex: next };
}

/** 2xx is a delivery; anything else (3xx included: redirects are not followed) is retried. */
export function isSuccess(httpStatus: number | null): boolean {
  return httpStatus !== null && httpStatus >= 200 && httpStatus < 300;
}
