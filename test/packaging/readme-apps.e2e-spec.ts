// Issue 34's "done when": a fresh Express app and a fresh Fastify app, each written from the packed
// README alone, pass the conformance kit. The package is packed; its README is read from the tarball
// and every `// src/<file>` block of its Quick start is written into a fresh project outside the
// repository (so the README's example is what compiles: it cannot rot), next to the tarball's package
// extracted into node_modules. The peers are links to this repository's installed copies - no
// registry, no install step (package-install.e2e-spec.ts installs with npm; this one proves the README).
// The project compiles with TypeScript's strict settings, both mains run as child processes on the
// run's MongoDB, and the kit (--config kit.json) runs against each; then the database is checked.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { packWorkspace, runCommand, type Ran } from '../support/run-command.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGE = '@idempotent-orders/nest-idempotency';
const FIXTURE = join(REPO, 'scripts', 'fresh-app', 'readme');
const KIT = join(REPO, 'packages', 'idempotency-conformance', 'dist', 'cli.js');
/** What the README's install line names, both platforms, and what compiles the app. */
const PEERS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/mongoose',
  'mongoose',
  'mongodb',
  'reflect-metadata',
  'rxjs',
  '@nestjs/platform-express',
  '@nestjs/platform-fastify',
  'fastify',
  'typescript',
  '@types/node',
];
const TOKENS = { acme: `acme-${randomBytes(6).toString('hex')}`, globex: `globex-${randomBytes(6).toString('hex')}` };

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  return runCommand(command, args, { cwd, env });
}

const say = (line: string) => process.stdout.write(`[readme-apps] ${line}\n`);

/** The README's `ts` blocks whose first line names a file (`// src/notes.controller.ts`), by that name. */
export function quotedFiles(readme: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const match of readme.matchAll(/^```ts\n\/\/ (src\/[\w.-]+\.ts)( \(on Fastify\))?\n([\s\S]*?)^```$/gm)) {
    files.set(match[2] ? match[1].replace(/\.ts$/, '.fastify.ts') : match[1], match[3]);
  }
  return files;
}

/** One README app as a child process, its output kept for failure messages. */
class ReadmeApp {
  readonly output: string[] = [];
  readonly exited: Promise<void>;
  exit: string | null = null;

  constructor(readonly child: ChildProcess) {
    const keep = (chunk: Buffer) => this.output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) =>
      child.once('close', (code, signal) => resolve(void (this.exit = `code ${code} signal ${signal}`))),
    );
  }

  describe(): string {
    return `[pid ${this.child.pid}, exit: ${this.exit ?? 'running'}]\n${this.output.slice(-40).join('\n')}`;
  }

  /** The README's main prints `listening on <url>`; the port is what the test needs (it listens on PORT=0). */
  async ready(timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exit) throw new Error(`the README app exited before it was ready\n${this.describe()}`);
      const port = this.output.map((line) => /^listening on http:\/\/.*:(\d+)\/?$/.exec(line)?.[1]).find(Boolean);
      if (port) return `http://127.0.0.1:${port}`;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the README app was not ready within ${timeoutMs} ms\n${this.describe()}`);
  }

  async stop(): Promise<void> {
    if (this.exit) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

describe('fresh apps written from the packed README alone pass the conformance kit (issue 34)', () => {
  const suffix = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  let work: string;
  let project: string;
  let readme: string;
  let mongo: MongoClient;
  const apps: ReadmeApp[] = [];
  const dbNames: string[] = [];

  beforeAll(async () => {
    const started = Date.now();
    const uri = process.env.MONGODB_URI;
    if (!uri) throw new Error('MONGODB_URI is not set: run through the root Jest config (its globalSetup starts MongoDB)');
    mongo = await MongoClient.connect(uri);
    work = realpathSync(mkdtempSync(join(tmpdir(), 'readme-apps-')));
    if (!relative(REPO, work).startsWith('..')) throw new Error(`${work} is inside the repository`);

    // 1. The tarball, as `npm publish` would ship it, extracted where `npm install` would put it.
    const { tarball } = await packWorkspace(PACKAGE, REPO, work);
    project = join(work, 'notes');
    const installed = join(project, 'node_modules', ...PACKAGE.split('/'));
    mkdirSync(installed, { recursive: true });
    const untar = await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], work);
    if (untar.code !== 0) throw new Error(`tar failed\n${untar.stderr}`);
    readme = readFileSync(join(installed, 'README.md'), 'utf8');

    // 2. Its dependencies and the app's peers: links to this repository's installed copies (no registry, seconds).
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const name of [...Object.keys(manifest.dependencies), ...PEERS]) {
      mkdirSync(dirname(join(project, 'node_modules', name)), { recursive: true });
      symlinkSync(join(REPO, 'node_modules', name), join(project, 'node_modules', name), 'dir');
    }

    // 3. The app: the README's files and nothing else but a package.json and the fixture's tsconfig.json.
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'notes', private: true, type: 'module' }, null, 2));
    cpSync(join(FIXTURE, 'tsconfig.json'), join(project, 'tsconfig.json'));
    for (const [path, text] of quotedFiles(readme)) {
      mkdirSync(dirname(join(project, path)), { recursive: true });
      writeFileSync(join(project, path), text);
    }
    const tsc = await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], project);
    if (tsc.code !== 0) throw new Error(`the README's app does not compile (${tsc.code})\n${tsc.stdout}\n${tsc.stderr}`);
    say(`packed, extracted, linked and compiled in ${((Date.now() - started) / 1000).toFixed(1)} s (tsc ${(tsc.ms / 1000).toFixed(1)} s)`);
  }, 180_000);

  afterAll(async () => {
    for (const app of apps) await app.stop();
    for (const name of dbNames)
      await mongo
        ?.db(name)
        .dropDatabase()
        .catch(() => undefined);
    await mongo?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 30_000);

  it('quotes the fixture the repository keeps, file for file (scripts/fresh-app/readme)', () => {
    const quoted = quotedFiles(readme);
    const kept = readdirSync(join(FIXTURE, 'src')).sort();
    expect([...quoted.keys()].sort()).toEqual(kept.map((name) => `src/${name}`));
    for (const name of kept)
      expect({ name, text: quoted.get(`src/${name}`) }).toEqual({ name, text: readFileSync(join(FIXTURE, 'src', name), 'utf8') });
  });

  describe.each([
    ['Express', 'main.js'],
    ['Fastify', 'main.fastify.js'],
  ])('the README app on %s', (platform, main) => {
    const dbName = `test_readme_${platform.toLowerCase()}_${suffix}`;
    let baseUrl: string;
    let app: ReadmeApp;

    beforeAll(async () => {
      dbNames.push(dbName);
      const uri = new URL(process.env.MONGODB_URI!);
      uri.pathname = `/${dbName}`;
      // The emulator answers polling heartbeats only (a real replica set streams them); the README's code is unchanged.
      uri.searchParams.set('serverMonitoringMode', 'poll');
      // Only what the README tells a reader to set.
      const env = {
        PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
        HOME: process.env.HOME,
        MONGODB_URI: uri.toString(),
        PORT: '0',
        API_KEYS: `acme:${TOKENS.acme},globex:${TOKENS.globex}`,
        IDEM_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        IDEM_DIGEST_KEY: randomBytes(32).toString('base64'),
        NO_COLOR: '1',
      };
      app = new ReadmeApp(spawn(process.execPath, [join('dist', main)], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'], env }));
      apps.push(app);
      baseUrl = await app.ready();
    }, 60_000);

    it('passes every applicable row of the kit, and the database holds one note per completed key', async () => {
      const out = join(work, platform.toLowerCase());
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, 'note.json'), JSON.stringify({ text: 'milk', list: 'groceries' }));
      writeFileSync(
        join(out, 'kit.json'),
        JSON.stringify({
          'base-url': baseUrl,
          path: '/notes',
          'body-file': 'note.json',
          'vary-field': 'text',
          'key-status-path': '',
          skip: ['provider-outage:the README app calls no provider (simple mode: its writes are all in the database)'],
          json: 'report.json',
          junit: 'junit.xml',
        }),
      );
      const env = { ...process.env, CONFORMANCE_TOKEN: TOKENS.acme, CONFORMANCE_TOKEN_B: TOKENS.globex };
      const kit = await run(process.execPath, [KIT, '--config', 'kit.json'], out, env);
      const report = existsSync(join(out, 'report.json'))
        ? (JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as { rows: Array<{ id: string; status: string; reason?: string }> })
        : { rows: [] };
      const statuses = Object.fromEntries(report.rows.map((row) => [row.id, row.status]));
      expect({
        code: kit.code,
        statuses,
        stdout: kit.code === 0 ? '' : kit.stdout.slice(-4_000),
        app: kit.code === 0 ? '' : app.describe(),
      }).toEqual({
        code: 0,
        statuses: expect.any(Object),
        stdout: '',
        app: '',
      });
      say(
        `${platform}: ${kit.stdout
          .trim()
          .split('\n')
          .find((line) => /^\d+ rows:/.test(line))}`,
      );
      for (const row of report.rows.filter((row) => row.status !== 'PASS'))
        say(`${platform}: ${row.status} ${row.id}: ${row.reason ?? ''}`);
      // The kit's own rows plus the refund rows it skips without --refund-path: none may fail, 15 must pass.
      expect(
        Object.entries(statuses)
          .filter(([, status]) => status === 'PASS')
          .map(([id]) => id)
          .sort(),
      ).toEqual(
        [
          'client-guidance',
          'concurrent-duplicates',
          'first-use',
          'get-resource',
          'key-sent-twice',
          'lost-response',
          'malformed-key',
          'missing-key',
          'other-body',
          'quoted-key',
          'refused-body',
          'reordered-json',
          'replay',
          'second-tenant',
          'unauthenticated',
        ].sort(),
      );

      // One note per completed key, each in its tenant; no key left pending, none completed without its note.
      const db = mongo.db(dbName);
      const records = await db.collection('idempotency_records').find({ operation: 'notes.create' }).toArray();
      const notes = await db.collection('notes').find({}).toArray();
      expect(records.filter((record) => record.status === 'pending')).toEqual([]);
      expect(notes).toHaveLength(records.filter((record) => record.status === 'complete').length);
      expect(new Set(notes.map((note) => note.tenant))).toEqual(new Set(['acme', 'globex']));
    }, 120_000);
  });
});
