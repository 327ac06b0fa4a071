#!/usr/bin/env node
// `npm start`'s build: compiles only the parts whose sources changed since
// their last successful build here, so a second start is a boot, not a
// rebuild. Each part (the three packages, then the service) has a stamp in
// its dist/; a part is built again when a source file, its tsconfig or its
// package.json is newer than that stamp, or when something it is built on
// (a package) was just built. tsc's own incremental mode is still on inside
// a build, but a no-op tsc run costs 10-20 s here, which this skips.
// Hand-written (no library): it is a dozen lines of mtimes over fixed folders.
// `npm run build` (CI, npm test) always builds everything and type-checks.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const STAMP = '.build-stamp';
const started = Date.now();

/** The newest modification time under `paths` (files or folders; dist and node_modules skipped). */
function newest(paths) {
  let latest = 0;
  const visit = (path) => {
    if (!existsSync(path)) return;
    const stat = statSync(path);
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path)) if (entry !== 'node_modules' && entry !== 'dist') visit(join(path, entry));
    } else {
      latest = Math.max(latest, stat.mtimeMs);
    }
  };
  paths.forEach(visit);
  return latest;
}

const stampTime = (dist) => (existsSync(join(dist, STAMP)) ? statSync(join(dist, STAMP)).mtimeMs : 0);

const packages = ['nest-idempotency', 'idempotency-conformance', 'idempotent-client'].map((name) => ({
  name: `packages/${name}`,
  dist: `packages/${name}/dist`,
  inputs: [
    `packages/${name}/src`,
    `packages/${name}/tsconfig.json`,
    `packages/${name}/tsconfig.build.json`,
    `packages/${name}/package.json`,
    'tsconfig.base.json',
  ],
  build: ['npm', ['run', 'build', '--silent', '-w', `packages/${name}`]],
}));
const service = {
  name: 'the service (src, bench)',
  dist: 'dist',
  inputs: ['src', 'bench', 'tsconfig.json', 'tsconfig.base.json', 'tsconfig.build.json', 'package.json'],
  build: [process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json']],
  ready: 'dist/src/main.js',
};

const built = [];
let packageBuilt = false;
for (const part of [...packages, service]) {
  const stale = newest(part.inputs) > stampTime(part.dist) || (part.ready && !existsSync(part.ready)) || (part === service && packageBuilt);
  if (!stale) continue;
  const t0 = Date.now();
  execFileSync(part.build[0], part.build[1], { stdio: 'inherit' });
  writeFileSync(join(part.dist, STAMP), `${new Date().toISOString()}\n`);
  built.push(`${part.name} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (part !== service) packageBuilt = true;
}
const took = ((Date.now() - started) / 1000).toFixed(1);
process.stdout.write(
  built.length ? `build: compiled ${built.join(', ')} (${took} s)\n` : `build: nothing changed since the last build (${took} s)\n`,
);
