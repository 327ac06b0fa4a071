import type { Counter } from 'prom-client';

/** What the guard needs of a logger: Nest's Logger.error(message, stack) fits. */
export interface RejectionLogger {
  error(message: unknown, stack?: string): void;
}

/** At most this many distinct `kind` labels; later names are counted as `other` (an error name is not a bounded set). */
const MAX_KINDS = 32;

/**
 * The process-level guard (issue 37 item 0). Node's default for a promise
 * that rejects with nobody listening is to kill the process: a frozen store
 * turned one such rejection in a background pass into a crash loop that
 * dropped every in-flight request, where the contract promises 503 +
 * Retry-After. Each known source now handles its own failure (PeriodicTask
 * logs a failed pass); this guard is for the one nobody has found yet. It
 * hides nothing: every rejection is logged at error level with its stack and
 * counted by kind (the error's class name) in
 * `process_unhandled_rejections_total` (alert on any increase) - a rejection
 * here is a bug to fix at its source, never a normal event.
 * Returns a function that removes the guard (tests).
 */
export function guardUnhandledRejections(
  counter: Pick<Counter<'kind'>, 'inc'>,
  logger: RejectionLogger,
  target: Pick<NodeJS.Process, 'on' | 'off'> = process,
): () => void {
  const kinds = new Set<string>();
  const handler = (reason: unknown) => {
    const name = reason instanceof Error ? reason.name : typeof reason;
    let kind = /^[A-Za-z][\w]{0,63}$/.test(name) ? name : 'other';
    if (!kinds.has(kind)) {
      if (kinds.size >= MAX_KINDS) kind = 'other';
      else kinds.add(kind);
    }
    counter.inc({ kind });
    logger.error(
      { msg: 'unhandled promise rejection (a bug: its source must handle it); the process keeps serving', kind, error: String(reason) },
      reason instanceof Error ? reason.stack : undefined,
    );
  };
  target.on('unhandledRejection', handler);
  return () => target.off('unhandledRejection', handler);
}
