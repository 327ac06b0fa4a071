#!/usr/bin/env node
// `npm run start:dev`: watch mode. Builds what changed (scripts/build-changed.mjs), then
// tsc --watch recompiles the service's sources as they are saved and `node --watch`
// restarts the service on each new output. The packages are not watched: after
// editing one, stop and start again (their build is then the only one redone).
import { execFileSync, spawn } from 'node:child_process';

execFileSync(process.execPath, ['scripts/build-changed.mjs'], { stdio: 'inherit' });
const children = [
  spawn(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--watch', '--preserveWatchOutput'], {
    stdio: 'inherit',
  }),
  spawn(process.execPath, ['--watch-path=dist/src', '--watch-preserve-output', 'dist/src/main.js'], { stdio: 'inherit' }),
];
const stop = () => children.forEach((child) => child.kill('SIGTERM'));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
children.forEach((child) => child.once('exit', (code) => (stop(), (process.exitCode ||= code ?? 0))));
