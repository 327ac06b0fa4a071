// Issue 34 item 5: what `npm publish` would ship, and a CommonJS app (what `nest new` generates) loading it.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const ROOT = join(PACKAGE_DIR, '..', '..');
const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as Record<string, unknown>;

describe('the package as published', () => {
  it('is publishable: not private, MIT with its LICENSE, Node with require(esm) as its floor', () => {
    expect(manifest.private).toBeUndefined();
    expect(manifest.license).toBe('MIT');
    expect(readFileSync(join(PACKAGE_DIR, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    // require() of an ES module without top-level await is on by default from Node 22.12 (and 20.19).
    expect(manifest.engines).toEqual({ node: '>=22.12' });
  });

  it('packs dist, README and LICENSE, without source maps or specs', () => {
    const [pack] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PACKAGE_DIR, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    const files = pack.files.map((file) => file.path);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts']));
    expect(files.filter((path) => /\.map$|\.spec\.|\.tsbuildinfo$|^src\//.test(path))).toEqual([]);
  });

  it('loads from a CommonJS consumer through require(), every entry', () => {
    // Where an app's own file sits: resolution walks up to the workspace's node_modules, as from an installed copy.
    const dir = join(ROOT, 'node_modules', '.cache', 'nest-idempotency-cjs');
    mkdirSync(dir, { recursive: true });
    const probe = join(dir, 'consumer.cjs');
    writeFileSync(
      probe,
      [
        "require('reflect-metadata');",
        "const idempotency = require('@idempotent-orders/nest-idempotency');",
        "const openapi = require('@idempotent-orders/nest-idempotency/openapi');",
        'console.log(JSON.stringify([typeof idempotency.IdempotencyModule.forRootAsync, typeof idempotency.Idempotent, typeof idempotency.IdempotencyProblemFilter, typeof openapi.ApiIdempotent]));',
      ].join('\n'),
    );
    const out = execFileSync(process.execPath, [probe], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual(['function', 'function', 'function', 'function']);
  });

  it("names in its README only paths the tarball holds, or the repository's (the prefixes it declares), and package subpaths it exports", () => {
    const [pack] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: PACKAGE_DIR, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    const packed = pack.files.map((file) => file.path);
    const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
    const repositoryPrefixes = ['test/', 'scripts/', 'ops/', 'docs/runbooks/', 'packages/'];
    for (const prefix of repositoryPrefixes) expect(readme).toContain(`\`${prefix}\``);
    const exported = Object.keys(manifest.exports as Record<string, unknown>);
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]).filter((target) => !/^[a-z]+:/.test(target));
    const paths = [...readme.matchAll(/`((?:\.\/)?[a-z][\w.-]*(?:\/[\w.-]*)+)`/g)].map((match) => match[1]);
    const unresolved = [...links, ...paths].filter((path) => {
      if (path.startsWith('./') && exported.includes(path)) return false;
      const bare = path.replace(/^\.\//, '').replace(/#.*$/, '');
      if (repositoryPrefixes.some((prefix) => bare.startsWith(prefix))) return links.includes(path);
      return !packed.some((file) => file === bare || file.startsWith(bare.endsWith('/') ? bare : `${bare}/`));
    });
    // Quoted example files (`// src/notes.controller.ts`) are the reader's own app, not paths: they sit in code blocks, not backticks.
    expect(paths.length).toBeGreaterThan(5);
    expect(unresolved).toEqual([]);
  });

  it('documents every module option in its README options table', () => {
    const source = readFileSync(join(PACKAGE_DIR, 'src', 'options.ts'), 'utf8');
    const body = source.slice(source.indexOf('export interface IdempotencyModuleOptions {'));
    const options = [...body.slice(0, body.indexOf('\n}\n')).matchAll(/^ {2}(\w+)[?(:]/gm)].map((match) => match[1]);
    const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('| option | default | range'), readme.indexOf('\n## Ports'));
    expect(options.length).toBeGreaterThan(15);
    expect(options.filter((name) => !new RegExp(`^\\| \`${name}[.(\`]`, 'm').test(table))).toEqual([]);
  });

  it('quotes in its Quick start the fixture app the soak compiles and runs (scripts/fresh-app/readme), file for file', () => {
    const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
    const quoted = [...readme.matchAll(/^```ts\n\/\/ (src\/[\w.-]+\.ts)( \(on Fastify\))?\n([\s\S]*?)^```$/gm)].map((match) => ({
      file: match[2] ? match[1].replace(/\.ts$/, '.fastify.ts') : match[1],
      text: match[3],
    }));
    const fixture = join(ROOT, 'scripts', 'fresh-app', 'readme');
    const kept = readdirSync(join(fixture, 'src')).sort();
    expect(quoted.map((block) => block.file).sort()).toEqual(kept.map((name) => `src/${name}`));
    for (const block of quoted) expect(block).toEqual({ file: block.file, text: readFileSync(join(fixture, block.file), 'utf8') });
  });
});
