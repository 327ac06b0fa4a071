import { describe, expect, it } from '@jest/globals';
import { builtinModules } from 'node:module';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('.', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const OPTIONAL_PEERS = Object.keys(PACKAGE.peerDependenciesMeta).filter((name) => PACKAGE.peerDependenciesMeta[name].optional);
const SPEC = /\.(int-)?spec\.ts$/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !SPEC.test(entry.name) ? [path] : [];
  });
}

/** Static imports and re-exports (`import ... from`, `export ... from`, bare `import '...'`), not `import()`. */
function staticImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'|^import\s+'([^']+)'/gms)].map((match) => match[1] ?? match[2]);
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

function resolveLocal(from: string, specifier: string): string {
  return resolve(dirname(from), specifier.replace(/\.js$/, '.ts'));
}

describe('the package imports nothing from the app (issue 23)', () => {
  it('names only Node built-ins, its own files, and its declared dependencies and peers', () => {
    const declared = new Set([...Object.keys(PACKAGE.dependencies), ...Object.keys(PACKAGE.peerDependencies)]);
    const builtins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);
    const offenders: string[] = [];
    for (const file of sources(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const specifier of [...text.matchAll(/from\s+'([^']+)'|import\('([^']+)'\)/g)].map((m) => m[1] ?? m[2])) {
        if (specifier.startsWith('.')) {
          const target = resolveLocal(file, specifier);
          if (relative(SRC, target).startsWith('..') || !existsSync(target)) offenders.push(`${relative(SRC, file)}: ${specifier}`);
        } else if (!builtins.has(specifier) && !declared.has(packageName(specifier))) {
          offenders.push(`${relative(SRC, file)}: ${specifier} (not a dependency or peer)`);
        }
      }
    }
    expect(sources(SRC).length).toBeGreaterThan(20);
    expect(offenders).toEqual([]);
  });

  it("keeps the optional peers (ioredis, opossum, prom-client, @nestjs/swagger, fastify, the emulator) out of the main entry's static import graph", () => {
    const seen = new Set<string>();
    const reached: string[] = [];
    const walk = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const specifier of staticImports(file)) {
        if (specifier.startsWith('.')) walk(resolveLocal(file, specifier));
        else if (OPTIONAL_PEERS.includes(packageName(specifier))) reached.push(`${relative(SRC, file)} -> ${specifier}`);
      }
    };
    walk(join(SRC, 'index.ts'));
    expect(OPTIONAL_PEERS.sort()).toEqual([
      '@jongodb/memory-server-bin-linux-x64-gnu',
      '@nestjs/swagger',
      'fastify',
      'ioredis',
      'opossum',
      'prom-client',
    ]);
    // The embedded store (./embedded-store) is reached from no entry an app loads: only tests and the bin.
    expect([...seen].filter((file) => file.startsWith(join(SRC, 'embedded-store')))).toEqual([]);
    expect(seen.size).toBeGreaterThan(20);
    expect(reached).toEqual([]);
  });

  it('never imports its ./testing entry from its own code', () => {
    const offenders = sources(SRC)
      .filter((file) => !file.startsWith(join(SRC, 'testing')))
      .filter((file) => staticImports(file).some((specifier) => /(^|\/)testing(\/index)?\.js$/.test(specifier)));
    expect(offenders).toEqual([]);
  });
});

describe('folders depend one way (architecture review 2026-12-01, §3.1 item 3)', () => {
  it('protocol/ imports nothing from http/: the key context is the protocol input, http/ builds it', () => {
    const offenders = sources(join(SRC, 'protocol')).flatMap((file) =>
      staticImports(file)
        .filter((specifier) => specifier.startsWith('.') && resolveLocal(file, specifier).startsWith(join(SRC, 'http')))
        .map((specifier) => `${relative(SRC, file)} -> ${specifier}`),
    );
    expect(offenders).toEqual([]);
  });

  it('fast-path/ imports nothing from recovery/: what an erasure changed is a protocol type', () => {
    const offenders = sources(join(SRC, 'fast-path')).flatMap((file) =>
      staticImports(file)
        .filter((specifier) => specifier.startsWith('.') && resolveLocal(file, specifier).startsWith(join(SRC, 'recovery')))
        .map((specifier) => `${relative(SRC, file)} -> ${specifier}`),
    );
    expect(offenders).toEqual([]);
  });

  it('store/ imports from protocol/ only types, and only from protocol/record.ts', () => {
    const offenders = sources(join(SRC, 'store')).flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [...text.matchAll(/^(import|export)(\s+type)?\s[^;]*?from\s+'([^']+)'/gms)]
        .filter((match) => match[3].startsWith('.') && resolveLocal(file, match[3]).startsWith(join(SRC, 'protocol')))
        .filter((match) => !match[2] || resolveLocal(file, match[3]) !== join(SRC, 'protocol', 'record.ts'))
        .map((match) => `${relative(SRC, file)} -> ${match[3]}${match[2] ? '' : ' (not type-only)'}`);
    });
    expect(offenders).toEqual([]);
  });

  it('has no import circle, type imports included (what `npx madge --circular --extensions ts` reports)', () => {
    // Tarjan's strongly connected components over the static imports: madge is not a dependency here, so the check is ours.
    const graph = new Map(
      sources(SRC).map((file) => [
        file,
        staticImports(file)
          .filter((s) => s.startsWith('.'))
          .map((s) => resolveLocal(file, s)),
      ]),
    );
    const order = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const circles: string[][] = [];
    const visit = (file: string): void => {
      order.set(file, order.size);
      low.set(file, order.get(file)!);
      stack.push(file);
      for (const next of graph.get(file) ?? []) {
        if (!graph.has(next)) continue;
        if (!order.has(next)) {
          visit(next);
          low.set(file, Math.min(low.get(file)!, low.get(next)!));
        } else if (stack.includes(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
      }
      if (low.get(file) !== order.get(file)) return;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(relative(SRC, member));
      } while (member !== file);
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(component.sort());
    };
    for (const file of graph.keys()) if (!order.has(file)) visit(file);
    expect(graph.size).toBeGreaterThan(40);
    expect(circles).toEqual([]);
  });
});
