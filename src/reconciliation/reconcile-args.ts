/** `--from <date> --to <date>` (ISO 8601; a bare date is midnight UTC): the period [from, to). */
export interface ReconcileArgs {
  from: Date;
  to: Date;
}

export class ReconcileUsageError extends Error {
  constructor(detail: string) {
    super(`${detail}\nusage: npm run reconcile -- --from 2026-01-01 --to 2026-01-02   (the period [from, to), ISO 8601, UTC)`);
    this.name = 'ReconcileUsageError';
  }
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

export function parseReconcileArgs(argv: readonly string[]): ReconcileArgs {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const match = /^--(from|to)(?:=(.*))?$/.exec(argv[i]);
    if (!match) throw new ReconcileUsageError(`unknown argument ${JSON.stringify(argv[i])}`);
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new ReconcileUsageError(`--${match[1]} needs a date`);
    values[match[1]] = value;
  }
  const from = parseDate('from', values.from);
  const to = parseDate('to', values.to);
  if (from.getTime() >= to.getTime()) throw new ReconcileUsageError('--to must be after --from');
  return { from, to };
}

function parseDate(name: string, value: string | undefined): Date {
  if (value === undefined) throw new ReconcileUsageError(`--${name} is required`);
  const date = new Date(/T/.test(value) ? value : `${value}T00:00:00Z`);
  if (!ISO.test(value) || Number.isNaN(date.getTime()))
    throw new ReconcileUsageError(`--${name} ${JSON.stringify(value)} is not an ISO 8601 date`);
  return date;
}
