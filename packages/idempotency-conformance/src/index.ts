// The programmatic API of the conformance kit: what the `idempotency-conformance`
// command does, for a test suite or a script of your own. Everything here runs
// over HTTP(S) only and imports nothing but Node built-ins.

/**
 * Runs every row, in order, against one deployment and resolves to the report;
 * writes the JUnit XML and JSON reports when `junitPath` / `jsonPath` are given.
 * Rejects with {@link UsageError} before the first request when an option is invalid.
 */
export { runConformance } from './run.js';

/** The options of {@link runConformance}; the command-line flags map to them one to one. */
export type { ConformanceOptions } from './options.js';

/** The defaults {@link runConformance} fills in (route, fields, limits, report paths). */
export { DEFAULTS } from './options.js';

/** An invalid option (or body file): the command line's exit code 2. */
export { UsageError } from './options.js';

/** The command line's `--help` text: every flag with its default, the rows, the exit codes. */
export { HELP } from './options.js';

/** One run's report, as the JSON report holds it: every row, the counts, and whether no row FAILed. */
export type { Report } from './report.js';

/** One row's result: its id, title, the clause it checks, its status, the reason and the evidence. */
export type { RowResult } from './report.js';

/** PASS, FAIL, SKIP, or XFAIL (a FAIL declared known with `expectFail`). */
export type { RowStatus } from './report.js';

/** What a row saw: status, the contract's headers, the first bytes of the body, or why there was no answer. */
export type { Evidence } from './evidence.js';

/** A JSON value, as the request bodies are given. */
export type { Json } from './bodies.js';

/** A row's id, as `skip` and `expectFail` take it. */
export type { RowId } from './rows.js';

/** Every row's id, in the order the rows run. */
export { ROW_IDS } from './rows.js';

/** Whether a string is one of {@link ROW_IDS}. */
export { isRowId } from './rows.js';

/** One row as the command line prints it: status, id, title, clause, result and evidence. */
export { formatRow } from './report.js';

/** The one-line summary the command line prints after the rows. */
export { formatSummary } from './report.js';

/** The command line's exit code for a report: 0 when no row FAILed, else 1. */
export { exitCodeFor } from './report.js';

/** The kit's lossy TCP proxy (drops answers, refuses connections), for clients' own exactly-once tests. */
export { startLossyProxy } from './lossy-proxy.js';
/** A running lossy proxy: its address and its switches. */
export type { LossyProxy } from './lossy-proxy.js';
