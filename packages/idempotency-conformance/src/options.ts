import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Json } from './bodies.js';
import type { RowResult } from './report.js';
import { isRowId, ROW_IDS, type RowId } from './rows.js';

/** The programmatic entry's options; the CLI flags map one to one (see HELP). */
export interface ConformanceOptions {
  baseUrl: string;
  /** API key of tenant A (sent as Authorization: Bearer). */
  token: string;
  /** API key of a second tenant; without it second-tenant is SKIP. */
  tokenB?: string;
  /** The @Idempotent POST route under test. */
  path?: string;
  /** Its request body; default: an order of this service with the run's own customer id. */
  body?: Json;
  otherBody?: Json;
  /** A body the route refuses (4xx) before it runs, e.g. failing validation; default `{}`. */
  refusedBody?: Json;
  varyField?: string;
  outageBody?: Json;
  outageField?: string;
  outageValue?: string;
  /** Template with {key} for the key's record (this service's admin view); null: do not look. */
  keyStatusPath?: string | null;
  /**
   * Template with {id} of the keyed refund route of a resource made through `path`
   * (e.g. /v1/orders/{id}/refunds); without it the refund rows are SKIP.
   */
  refundPath?: string;
  /** The refund's JSON body; the kit sets the amount at `refundAmountField`. Default {amountMinor, reason}. */
  refundBody?: Json;
  refundAmountField?: string;
  /** What a fresh resource can refund in total; default: its 201 body's capturedMinor, else amountMinor. */
  refundTotal?: number;
  /** Template with {id} of the resource's GET, read after the over-capture refunds; null: judge by the answers. */
  resourcePath?: string | null;
  /** The field of that GET holding the amount refunded so far. */
  refundedField?: string;
  concurrency?: number;
  timeoutMs?: number;
  maxRequests?: number;
  /** Rows not to run, with the reason printed. */
  skip?: Partial<Record<RowId, string>>;
  /** Rows known to fail, with the reason: a FAIL is reported XFAIL, a PASS becomes a FAIL (update the list). */
  expectFail?: Partial<Record<RowId, string>>;
  junitPath?: string;
  jsonPath?: string;
  /** Called as each row finishes (the CLI prints it). */
  onRow?: (row: RowResult) => void;
}

/** What resolveOptions fills in for an option not given (the CLI also defaults the report paths to these). */
export const DEFAULTS = {
  path: '/v1/orders',
  varyField: 'customerId',
  outageField: 'paymentMethod.token',
  outageValue: 'tok_provider_down',
  keyStatusPath: '/v1/idempotency-keys/{key}',
  concurrency: 5,
  timeoutMs: 10_000,
  maxRequests: 100,
  refundAmountField: 'amountMinor',
  refundReason: 'requested_by_customer',
  refundedField: 'refundedMinor',
  junitPath: 'conformance-results/junit.xml',
  jsonPath: 'conformance-results/report.json',
} as const;

export type ResolvedOptions = Omit<ConformanceOptions, 'tokenB' | 'keyStatusPath' | 'skip' | 'expectFail' | 'refundPath' | 'resourcePath'> &
  Required<
    Pick<
      ConformanceOptions,
      | 'path'
      | 'varyField'
      | 'outageField'
      | 'outageValue'
      | 'concurrency'
      | 'timeoutMs'
      | 'maxRequests'
      | 'refundAmountField'
      | 'refundedField'
    >
  > & {
    tokenB: string | null;
    keyStatusPath: string | null;
    refundPath: string | null;
    resourcePath: string | null;
    skip: Partial<Record<RowId, string>>;
    expectFail: Partial<Record<RowId, string>>;
  };

/** An invalid option or body file: nothing was sent; the CLI exits 2 and prints HELP. */
export class UsageError extends Error {}

/** Defaults filled in and every value checked before the first request is sent. */
export function resolveOptions(options: ConformanceOptions): ResolvedOptions {
  const resolved: ResolvedOptions = {
    ...options,
    path: options.path ?? DEFAULTS.path,
    varyField: options.varyField ?? DEFAULTS.varyField,
    outageField: options.outageField ?? DEFAULTS.outageField,
    outageValue: options.outageValue ?? DEFAULTS.outageValue,
    keyStatusPath: options.keyStatusPath === undefined ? DEFAULTS.keyStatusPath : options.keyStatusPath || null,
    concurrency: options.concurrency ?? DEFAULTS.concurrency,
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    maxRequests: options.maxRequests ?? DEFAULTS.maxRequests,
    refundPath: options.refundPath || null,
    refundAmountField: options.refundAmountField ?? DEFAULTS.refundAmountField,
    resourcePath: options.resourcePath || null,
    refundedField: options.refundedField ?? DEFAULTS.refundedField,
    tokenB: options.tokenB || null,
    skip: options.skip ?? {},
    expectFail: options.expectFail ?? {},
  };
  const problems = problemsOf(resolved);
  if (problems.length > 0) throw new UsageError(problems.join('; '));
  return resolved;
}

function problemsOf(options: ResolvedOptions): string[] {
  const url = URL.canParse(options.baseUrl) ? new URL(options.baseUrl) : null;
  const listed = [...Object.keys(options.skip), ...Object.keys(options.expectFail)];
  return [
    (!url || !/^https?:$/.test(url.protocol)) && `--base-url must be an http(s) URL, got "${options.baseUrl}"`,
    !options.token && '--token is required (or CONFORMANCE_TOKEN)',
    !options.path.startsWith('/') && `--path must start with "/", got "${options.path}"`,
    !integerIn(options.concurrency, 2, 20) && '--concurrency must be an integer from 2 to 20',
    !integerIn(options.timeoutMs, 100, 120_000) && '--timeout-ms must be an integer from 100 to 120000',
    !integerIn(options.maxRequests, 1, 1_000) && '--max-requests must be an integer from 1 to 1000',
    options.keyStatusPath !== null &&
      !/^\/.*\{key\}/.test(options.keyStatusPath) &&
      '--key-status-path must start with "/" and contain {key}',
    options.refundPath !== null && !/^\/.*\{id\}/.test(options.refundPath) && '--refund-path must start with "/" and contain {id}',
    options.resourcePath !== null && !/^\/.*\{id\}/.test(options.resourcePath) && '--resource-path must start with "/" and contain {id}',
    options.refundTotal !== undefined &&
      !integerIn(options.refundTotal, 1, Number.MAX_SAFE_INTEGER) &&
      '--refund-total must be a whole number >= 1',
    ...listed.filter((id) => !isRowId(id)).map((id) => `unknown row "${id}" (rows: ${ROW_IDS.join(', ')})`),
  ].filter((problem): problem is string => typeof problem === 'string');
}

const integerIn = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max;

export interface BodyFiles {
  body?: string;
  otherBody?: string;
  refusedBody?: string;
  outageBody?: string;
  refundBody?: string;
}

export type CliCommand = { kind: 'help' } | { kind: 'run'; options: ConformanceOptions; bodyFiles: BodyFiles };

const FLAGS = {
  'base-url': { type: 'string' },
  token: { type: 'string' },
  'token-b': { type: 'string' },
  path: { type: 'string' },
  'body-file': { type: 'string' },
  'other-body-file': { type: 'string' },
  'refused-body-file': { type: 'string' },
  'vary-field': { type: 'string' },
  'outage-body-file': { type: 'string' },
  'outage-field': { type: 'string' },
  'outage-value': { type: 'string' },
  'key-status-path': { type: 'string' },
  'refund-path': { type: 'string' },
  'refund-body-file': { type: 'string' },
  'refund-amount-field': { type: 'string' },
  'refund-total': { type: 'string' },
  'resource-path': { type: 'string' },
  'refunded-field': { type: 'string' },
  concurrency: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'max-requests': { type: 'string' },
  skip: { type: 'string', multiple: true },
  'expect-fail': { type: 'string', multiple: true },
  junit: { type: 'string' },
  json: { type: 'string' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type FlagName = keyof typeof FLAGS;
type FlagValues = {
  [name in FlagName]?: (typeof FLAGS)[name] extends { type: 'boolean' }
    ? boolean
    : (typeof FLAGS)[name] extends { multiple: true }
      ? string[]
      : string;
};

/**
 * `--config kit.json`: the same flags as a JSON object (`{"base-url": "...",
 * "path": "/payments", "skip": ["row:reason"]}`), numbers allowed for numeric
 * flags; a flag on the command line wins over the file.
 */
export function configFlags(text: string, file: string): FlagValues {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--config ${file}: not JSON (${(error as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new UsageError(`--config ${file}: a JSON object of flags`);
  const values: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(parsed)) {
    const flag = (FLAGS as Record<string, { type: string; multiple?: boolean }>)[name];
    if (!flag || name === 'config' || name === 'help') throw new UsageError(`--config ${file}: unknown flag "${name}"`);
    const scalar = (item: unknown) => (typeof item === 'string' || typeof item === 'number' ? String(item) : null);
    const converted = flag.multiple ? (Array.isArray(value) ? value.map(scalar) : [scalar(value)]) : scalar(value);
    if (converted === null || (Array.isArray(converted) && converted.includes(null)))
      throw new UsageError(`--config ${file}: "${name}" must be a string${flag.multiple ? ' or a list of strings' : ' or a number'}`);
    values[name] = converted as string | string[];
  }
  return values;
}

/** argv without node and the script; tokens may come from the environment to stay out of `ps`. */
export function parseCliArgs(
  argv: string[],
  env: Record<string, string | undefined>,
  readConfig: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): CliCommand {
  let argValues: FlagValues;
  try {
    ({ values: argValues } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (argValues.help) return { kind: 'help' };
  const values: FlagValues = argValues.config
    ? { ...configFlags(readConfig(argValues.config), argValues.config), ...argValues }
    : argValues;
  const options: ConformanceOptions = {
    baseUrl: values['base-url'] ?? '',
    token: values.token ?? env.CONFORMANCE_TOKEN ?? '',
    tokenB: values['token-b'] ?? env.CONFORMANCE_TOKEN_B,
    path: values.path,
    varyField: values['vary-field'],
    outageField: values['outage-field'],
    outageValue: values['outage-value'],
    keyStatusPath: values['key-status-path'],
    refundPath: values['refund-path'],
    refundAmountField: values['refund-amount-field'],
    refundTotal: integerFlag(values['refund-total'], 'refund-total'),
    resourcePath: values['resource-path'],
    refundedField: values['refunded-field'],
    concurrency: integerFlag(values.concurrency, 'concurrency'),
    timeoutMs: integerFlag(values['timeout-ms'], 'timeout-ms'),
    maxRequests: integerFlag(values['max-requests'], 'max-requests'),
    skip: rowList(values.skip, 'skip'),
    expectFail: rowList(values['expect-fail'], 'expect-fail'),
    junitPath: values.junit ?? DEFAULTS.junitPath,
    jsonPath: values.json ?? DEFAULTS.jsonPath,
  };
  if (!options.baseUrl) throw new UsageError('--base-url is required');
  return {
    kind: 'run',
    options,
    bodyFiles: {
      body: values['body-file'],
      otherBody: values['other-body-file'],
      refusedBody: values['refused-body-file'],
      outageBody: values['outage-body-file'],
      refundBody: values['refund-body-file'],
    },
  };
}

function integerFlag(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number, got "${value}"`);
  return Number(value);
}

/** `row-id` or `row-id:reason`, repeatable; the reason is printed beside the row. */
function rowList(values: string[] | undefined, flag: string): Partial<Record<RowId, string>> {
  const rows: Partial<Record<RowId, string>> = {};
  for (const value of values ?? []) {
    const [id, ...reason] = value.split(':');
    if (!isRowId(id)) throw new UsageError(`--${flag}: unknown row "${id}" (rows: ${ROW_IDS.join(', ')})`);
    rows[id] = reason.join(':').trim() || `listed in --${flag}`;
  }
  return rows;
}

/** The `--help` text: every flag with its default, the rows and the exit codes. */
export const HELP = `Idempotency conformance kit: checks a deployment's idempotent POST route over HTTP only.

Usage: idempotency-conformance --base-url URL --token T [--token-b T2] [options]
       (npx @idempotent-orders/idempotency-conformance ... without installing it)

  --config FILE           the flags below as a JSON object ({"base-url": "...",
                          "path": "/payments", "skip": ["row:reason"]});
                          a flag given on the command line wins
  --base-url URL          the deployment (http or https; a path prefix is kept)
  --token T               tenant A's API key (or env CONFORMANCE_TOKEN)
  --token-b T2            a second tenant's API key (or env CONFORMANCE_TOKEN_B);
                          without it second-tenant is SKIP
  --path P                the @Idempotent POST route (default ${DEFAULTS.path})
  --body-file F           its JSON body (default: an order of this service, 1.00 USD,
                          customer conformance_<run id>)
  --other-body-file F     another valid body for the same key (default: the body with
                          --vary-field changed)
  --refused-body-file F   a body the route refuses (4xx, e.g. failing validation) before
                          it runs (default {})
  --vary-field PATH       dotted path of a string/number/boolean field (default ${DEFAULTS.varyField})
  --outage-body-file F    a body that makes the payment provider fail (default: the body
                          with --outage-field set to --outage-value)
  --outage-field PATH     default ${DEFAULTS.outageField}
  --outage-value V        default ${DEFAULTS.outageValue} (the simulator's outage token)
  --key-status-path P     the key's record, with {key} (default ${DEFAULTS.keyStatusPath});
                          "" to not look at it
  --refund-path P         a keyed refund route with {id}, e.g. /v1/orders/{id}/refunds:
                          runs the refund rows on resources the kit creates through
                          --path (id from the 201 body or Location); without it they
                          are SKIP
  --refund-body-file F    the refund's JSON body (default {"${DEFAULTS.refundAmountField}": N,
                          "reason": "${DEFAULTS.refundReason}"}); the kit sets the amount
  --refund-amount-field PATH  where the amount goes (default ${DEFAULTS.refundAmountField})
  --refund-total N        what a fresh resource can refund in total (default: its 201
                          body's capturedMinor, else amountMinor)
  --resource-path P       the resource's GET with {id}, read after the over-capture
                          refunds (default: none, judged by the answers)
  --refunded-field PATH   its amount refunded so far (default ${DEFAULTS.refundedField})
  --concurrency N         concurrent duplicates, 2-20 (default ${DEFAULTS.concurrency})
  --timeout-ms N          per request (default ${DEFAULTS.timeoutMs})
  --max-requests N        hard ceiling for the run (default ${DEFAULTS.maxRequests})
  --skip ROW[:reason]     do not run a row (repeatable)
  --expect-fail ROW[:why] a known failure: reported XFAIL, not failing the run; if it
                          passes, that is a FAIL (take it off the list) (repeatable)
  --junit F               JUnit XML report (default ${DEFAULTS.junitPath})
  --json F                JSON report (default ${DEFAULTS.jsonPath})

Rows: ${ROW_IDS.join(', ')}.
Exit code: 0 no FAIL, 1 at least one FAIL, 2 usage error. It sends only POST and
GET (never DELETE), with its own random keys and customer id.`;
