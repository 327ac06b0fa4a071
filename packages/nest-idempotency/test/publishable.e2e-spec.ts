// Issue 34 item 5: what `npm publish` would ship, and a CommonJS app (what `nest new` generates) loading it.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
});
