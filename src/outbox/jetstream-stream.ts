import type { OutboxSettings } from '../config/outbox.config.js';
import { MAX_BACKOFF_MS } from './outbox.relay.js';

/** Every subject the service publishes to: `orders.events.<type>`. */
export const SUBJECT_PREFIX = 'orders.events';
export const STREAM_SUBJECTS = `${SUBJECT_PREFIX}.>`;

export function subjectOf(type: string): string {
  return `${SUBJECT_PREFIX}.${type}`;
}

/** Slack on top of the relay's own bounds: a pass's duration and the clock skew between two relaying instances. */
const WINDOW_SLACK_MS = 60_000;

/**
 * The broker's duplicate window must cover the longest gap between two
 * publishes of one event by the relays, or the second one lands as a second
 * message. The gap is bounded by whichever is longer of:
 * - a failed publish: sent at the claim, failed at most `publishTimeoutMs`
 *   later, retried after a backoff of at most MAX_BACKOFF_MS;
 * - a relay dead after the publish (before or during the mark): the claim
 *   holds the event for 2 x `publishTimeoutMs`, then any relay takes it;
 * plus one relay interval (the next pass) and slack. NATS's default of
 * 2 minutes is shorter than the 5-minute backoff cap, hence a derived window.
 * Consumers still deduplicate on the event id: a publish the client buffered
 * through a disconnection can land later still. The window is an
 * optimisation, not the guarantee.
 */
export function duplicateWindowMs(outbox: Pick<OutboxSettings, 'publishTimeoutMs' | 'intervalMs'>): number {
  const failedThenRetried = outbox.publishTimeoutMs + MAX_BACKOFF_MS;
  const diedThenTakenOver = 2 * outbox.publishTimeoutMs;
  return Math.max(failedThenRetried, diedThenTakenOver) + outbox.intervalMs + WINDOW_SLACK_MS;
}

/** What the service needs of its stream (NATS's names and units; durations in nanoseconds). */
export interface RequiredStream {
  name: string;
  subjects: string[];
  storage: 'file';
  duplicate_window: number;
  num_replicas: number;
}

export function requiredStream(
  name: string,
  replicas: number,
  outbox: Pick<OutboxSettings, 'publishTimeoutMs' | 'intervalMs'>,
): RequiredStream {
  return { name, subjects: [STREAM_SUBJECTS], storage: 'file', duplicate_window: duplicateWindowMs(outbox) * 1e6, num_replicas: replicas };
}

/** The parts of an existing stream's configuration that are checked. */
export interface ExistingStream {
  subjects?: string[];
  storage: string;
  duplicate_window: number;
  num_replicas: number;
}

/**
 * Why an existing stream cannot take the service's events, if it cannot: its
 * subjects miss ours, it keeps them in memory (lost on a restart), or its
 * duplicate window is shorter than the relay's retry gap. Replicas are not a
 * contradiction (an operator may run more): they are reported, not refused.
 */
export function streamContradictions(existing: ExistingStream, required: RequiredStream): string[] {
  const problems: string[] = [];
  if (
    !(existing.subjects ?? []).some(
      (subject) => subject === STREAM_SUBJECTS || subject === `${SUBJECT_PREFIX.split('.')[0]}.>` || subject === '>',
    )
  ) {
    problems.push(`its subjects [${(existing.subjects ?? []).join(', ')}] do not include ${STREAM_SUBJECTS}`);
  }
  if (existing.storage !== required.storage)
    problems.push(`its storage is ${existing.storage}, not file (events would not survive a restart)`);
  if (existing.duplicate_window < required.duplicate_window) {
    problems.push(
      `its duplicate window is ${existing.duplicate_window / 1e9} s, shorter than the ${required.duplicate_window / 1e9} s the relay's retries need`,
    );
  }
  return problems;
}
