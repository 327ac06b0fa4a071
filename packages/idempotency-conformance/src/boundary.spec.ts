import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const packageJson = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as Record<string, unknown>;
const sources = readdirSync(here, { recursive: true, encoding: 'utf8' }).filter(
  (name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'),
);

// The kit is installed on its own from its tarball (`npx`) and run against
// other teams' deployments: it may only use Node and its own files, and the
// package declares nothing to install with it.
describe('the conformance kit stands alone', () => {
  it('imports nothing but node: built-ins and its own folder', () => {
    const imports = sources.flatMap((name) =>
      [...readFileSync(`${here}${name}`, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => `${name}: ${match[1]}`),
    );
    expect(sources).toEqual(expect.arrayContaining(['index.ts', 'cli.ts', 'run.ts']));
    expect(sources.length).toBeGreaterThan(8);
    expect(imports.filter((line) => !/: (node:[a-z/]+|\.\/[a-z-]+\.js)$/.test(line))).toEqual([]);
  });

  it('has no runtime dependencies in its package.json', () => {
    const declared = ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies', 'bundledDependencies'];
    expect(declared.filter((field) => packageJson[field] !== undefined)).toEqual([]);
    expect(packageJson.bin).toEqual({ 'idempotency-conformance': './dist/cli.js' });
  });

  it('starts its bin with a shebang, so npx can run it', () => {
    expect(readFileSync(`${here}cli.ts`, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });
});
