import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * The floor plan of src/ (docs: the architecture review's rules, §3.2), read
 * from the code's own import lines, in the style of the package's
 * boundary.spec.ts: a change that breaks a rule fails here, by name.
 */

const SRC = fileURLToPath(new URL('.', import.meta.url));
const SPEC = /\.(int-)?spec\.ts$/;
/** The composition roots: they sit at src/ and nothing imports them (main.ts starts AppModule). */
const ROOTS = ['main.ts', 'app.module.ts', 'reconcile.cli.ts'];
const OPERATIONS = ['capture-void', 'refunds', 'async-payments'];
const RECORDS = ['payments', 'ledger', 'outbox'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !SPEC.test(entry.name) ? [path] : [];
  });
}

/** Static imports and re-exports, type-only ones included (a type is a dependency of the reader, too). */
function localImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'|^import\s+'(\.[^']+)'/gms)]
    .map((match) => match[1] ?? match[2])
    .map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
}

/** The top folder of a file under src/ ('' for the roots at src/). */
function folderOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0] : '';
}

const FILES = sources(SRC);
const EDGES = FILES.flatMap((file) => localImports(file).map((target) => ({ from: file, to: target })));

/** Every import from a file in `from` to a file in one of `to`, as "a.ts -> b.ts". */
function crossings(from: string, to: string[]): string[] {
  return EDGES.filter((edge) => folderOf(edge.from) === from && to.includes(folderOf(edge.to))).map(
    (edge) => `${relative(SRC, edge.from)} -> ${relative(SRC, edge.to)}`,
  );
}

describe('the floor plan of src/', () => {
  it('reads a graph of the whole tree (every import resolves to a file)', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(EDGES.length).toBeGreaterThan(300);
    expect(EDGES.filter((edge) => !existsSync(edge.to)).map((edge) => `${relative(SRC, edge.from)} -> ${edge.to}`)).toEqual([]);
  });

  it('1. the order knows none of the operations on it', () => {
    expect(crossings('orders', [...OPERATIONS, 'cancel-by-key', 'webhooks'])).toEqual([]);
  });

  it('2. the operations on an order are siblings: none imports another', () => {
    for (const operation of OPERATIONS) {
      expect(
        crossings(
          operation,
          OPERATIONS.filter((other) => other !== operation),
        ),
      ).toEqual([]);
    }
  });

  it('3. the undo sits above what it undoes: only AppModule imports cancel-by-key, which composes by plain imports', () => {
    const importers = EDGES.filter((edge) => folderOf(edge.to) === 'cancel-by-key' && folderOf(edge.from) !== 'cancel-by-key');
    expect(importers.map((edge) => relative(SRC, edge.from))).toEqual(['app.module.ts']);
    const runTimeLookUps = FILES.filter((file) => /\bModuleRef\b/.test(readFileSync(file, 'utf8')));
    expect(runTimeLookUps.map((file) => relative(SRC, file))).toEqual([]);
    // Each keyed operation's name is written once, where the operation lives; the rest import it.
    for (const operation of ['orders.create', 'orders.refund', 'orders.capture', 'orders.void']) {
      const writers = FILES.filter((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .some((line) => line.includes(`'${operation}'`) && !/\bexample:/.test(line)),
      );
      expect({ operation, writers: writers.map((file) => relative(SRC, file)) }).toEqual({ operation, writers: [expect.any(String)] });
    }
  });

  it('4. a settlement is the same whoever asks: async-payments imports neither webhooks nor cancel-by-key', () => {
    expect(crossings('async-payments', ['webhooks', 'cancel-by-key'])).toEqual([]);
  });

  it('5. ports know no adapters: payments imports no provider, and only the composition roots bind the simulator', () => {
    expect(crossings('payments', ['payment-simulator', 'payment-stripe'])).toEqual([]);
    const binders = EDGES.filter((edge) => /payment-simulator\.module\.ts$/.test(edge.to) && folderOf(edge.from) !== 'payment-simulator');
    expect(binders.map((edge) => relative(SRC, edge.from)).sort()).toEqual(['app.module.ts', 'reconcile.cli.ts']);
  });

  it('6. records are written to and never reach back: payments, ledger and outbox import no order or operation', () => {
    const above = ['orders', ...OPERATIONS, 'cancel-by-key', 'webhooks', 'payment-simulator', 'reconciliation', 'admin', 'privacy'];
    for (const records of RECORDS) expect(crossings(records, above)).toEqual([]);
  });

  it('7. the composition roots live at src/ and nothing imports them (but main.ts, which starts AppModule)', () => {
    for (const root of ROOTS) expect(existsSync(join(SRC, root))).toBe(true);
    const importers = EDGES.filter((edge) => ROOTS.includes(relative(SRC, edge.to)) && !ROOTS.includes(relative(SRC, edge.from)));
    expect(importers.map((edge) => `${relative(SRC, edge.from)} -> ${relative(SRC, edge.to)}`)).toEqual([]);
  });

  it('has no import circles', () => {
    const next = new Map<string, string[]>();
    for (const edge of EDGES) next.set(edge.from, [...(next.get(edge.from) ?? []), edge.to]);
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      path.push(file);
      for (const target of next.get(file) ?? []) {
        if (state.get(target) === 'open') {
          circles.push([...path.slice(path.indexOf(target)), target].map((step) => relative(SRC, step)).join(' -> '));
        } else if (!state.has(target)) visit(target);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of FILES) if (!state.has(file)) visit(file);
    expect(circles).toEqual([]);
  });
});
