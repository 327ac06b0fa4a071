// Issue 23's last promise: a team installs the idempotency package from its
// tarball into a Nest app of its own and gets a replay on its own route.
// The package (built by `npm run build`, as `npm test` does first) is packed;
// a fresh project is made under the OS temp dir - outside this repository, so
// Node's resolution can never reach the repository's node_modules - with the
// tarball and only the required peers (exact versions of the ones this
// repository locks, so npm finds them in the cache `npm ci` warmed), never
// ioredis, opossum, prom-client or @nestjs/swagger. The app in
// scripts/fresh-app/template (POST /notes, `@Idempotent({ operation:
// 'notes.create' })`) is compiled there by that project's own TypeScript and
// run as a child process on the run's MongoDB.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { packWorkspace, runCommand, type Ran } from '../support/run-command.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const TEMPLATE = join(REPO, 'scripts', 'fresh-app', 'template');
const PACKAGE = '@idempotent-orders/nest-idempotency';
/** The peers a Nest + Fastify + MongoDB app needs, plus what compiles it there. */
const INSTALLED = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-fastify',
  '@nestjs/mongoose',
  'mongoose',
  'mongodb',
  'reflect-metadata',
  'rxjs',
  'typescript',
  '@types/node',
];
const OPTIONAL_PEERS = ['ioredis', 'opossum', 'prom-client', '@nestjs/swagger'];
const NPM_TIMEOUT_MS = 180_000;
const READY_TIMEOUT_MS = 30_000;
const TENANT = { 'x-tenant': 'acme' };

/**
 * A command as a team's shell runs it: none of the npm_* variables `npm test`
 * exported (npm_config_local_prefix would make the repository the project),
 * the Node that runs this test first on PATH.
 */
function run(command: string, args: string[], cwd: string, timeout = NPM_TIMEOUT_MS): Promise<Ran> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^npm_/i.test(name) && name !== 'NODE_PATH' && name !== 'NODE_OPTIONS') env[name] = value;
  }
  Object.assign(env, {
    PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
    npm_config_update_notifier: 'false',
    NO_COLOR: '1',
  });
  // The cache `npm ci` warmed, and where the registry is: kept whichever case they were set in.
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && /^npm_config_(cache|registry|userconfig)$/i.test(name)) env[name] = value;
  }
  return runCommand(command, args, { cwd, env, timeout });
}

const say = (line: string) => process.stdout.write(`[package-install] ${line}\n`);
const versionOf = (name: string): string =>
  (JSON.parse(readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/** The fresh app as a child process: its output kept for failure messages. */
class FreshApp {
  readonly output: string[] = [];
  readonly exited: Promise<void>;
  exit: string | null = null;

  constructor(readonly child: ChildProcess) {
    const keep = (chunk: Buffer) => this.output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        this.exit = `code ${code} signal ${signal}`;
        resolve();
      });
      child.once('error', (error) => {
        this.exit = `spawn error ${error.message}`;
        resolve();
      });
    });
  }

  describe(): string {
    return `[fresh app pid ${this.child.pid}, exit: ${this.exit ?? 'running'}]\n${this.output.slice(-60).join('\n')}`;
  }

  /** The base URL it printed once listening (it listens on PORT=0: no port to race for). */
  async ready(timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.exit) throw new Error(`the fresh app exited before it was ready\n${this.describe()}`);
      const line = this.output.find((text) => text.includes('fresh-app ready: listening on '));
      if (line) {
        const baseUrl = line.slice(line.indexOf('http://')).trim();
        const health = await fetch(`${baseUrl}/health`).catch(() => null);
        if (health?.status === 200) return baseUrl;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the fresh app was not ready within ${timeoutMs} ms\n${this.describe()}`);
  }

  async stop(): Promise<void> {
    if (this.exit) return;
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const gone = await Promise.race([
      this.exited.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 5_000))),
    ]);
    clearTimeout(timer);
    if (!gone) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}

interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  json: any;
}

describe('a fresh Nest app outside the repository, from the package tarball', () => {
  const dbName = `test_fresh_app_${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  let work: string;
  let project: string;
  let packed: string[];
  let app: FreshApp | undefined;
  let baseUrl: string;
  let mongo: MongoClient;

  const post = async (key: string | undefined, body: unknown): Promise<Answer> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...TENANT };
    if (key !== undefined) headers['idempotency-key'] = key;
    const res = await fetch(`${baseUrl}/notes`, { method: 'POST', headers, body: JSON.stringify(body) });
    const bytes = Buffer.from(await res.arrayBuffer());
    let json: any = null;
    try {
      json = JSON.parse(bytes.toString('utf8'));
    } catch {
      // asserted on by the caller
    }
    return { status: res.status, headers: res.headers, bytes, json };
  };

  beforeAll(async () => {
    const started = Date.now();
    const uri = process.env.MONGODB_URI;
    if (!uri) throw new Error('MONGODB_URI is not set: run through the root Jest config (its globalSetup starts MongoDB)');
    mongo = await MongoClient.connect(uri);
    work = realpathSync(mkdtempSync(join(tmpdir(), 'fresh-nest-app-')));
    if (!relative(REPO, work).startsWith('..')) throw new Error(`${work} is inside the repository`);

    // 1. Pack what `npm run build` built (--ignore-scripts: no rebuild of the workspace's dist/ under other tests).
    const pack = await packWorkspace(PACKAGE, REPO, work, (command, args, { cwd }) => run(command, args, cwd));
    const tarball = pack.tarball;
    packed = pack.files;

    // 2. A project of its own: the tarball and the required peers only.
    project = join(work, 'notes-app');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify(
        { name: 'fresh-notes-app', version: '0.0.0', private: true, type: 'module', scripts: { build: 'tsc -p tsconfig.json' } },
        null,
        2,
      ),
    );
    const specs = [tarball, ...INSTALLED.map((name) => `${name}@${versionOf(name)}`)];
    const common = ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--save-exact'];
    let flag = '--prefer-offline';
    let install = await run('npm', [...common, flag, ...specs], project);
    if (install.code !== 0) {
      say(`npm install ${flag} failed (${install.code}), trying --offline:\n${install.stderr}`);
      flag = '--offline';
      install = await run('npm', [...common, flag, ...specs], project);
    }
    if (install.code !== 0) throw new Error(`npm install ${flag} failed (${install.code})\n${install.stderr}`);
    say(
      `npm install ${flag} of the tarball + ${INSTALLED.length} packages: ${(install.ms / 1000).toFixed(1)} s (${install.stdout.trim()})`,
    );

    // 3. The app's sources, compiled by the project's own TypeScript (decorators + their metadata, nodenext).
    cpSync(TEMPLATE, project, { recursive: true, filter: (path) => !/[\\/](node_modules|dist)$/.test(path) });
    const tsc = await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], project);
    if (tsc.code !== 0) throw new Error(`tsc failed in the fresh app (${tsc.code})\n${tsc.stdout}\n${tsc.stderr}`);
    say(`tsc in the fresh app: ${(tsc.ms / 1000).toFixed(1)} s`);

    // 4. Run it: its environment is all it is told (the package reads none of it).
    const child = spawn(process.execPath, [join('dist', 'main.js')], {
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        MONGODB_URI: uri,
        MONGODB_DB_NAME: dbName,
        PORT: '0',
        HOST: '127.0.0.1',
        NOTES_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        NOTES_DIGEST_KEY: randomBytes(32).toString('base64'),
        NO_COLOR: '1',
      },
    });
    app = new FreshApp(child);
    baseUrl = await app.ready(READY_TIMEOUT_MS);
    say(`fresh app ready at ${baseUrl}; setup took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 240_000);

  afterAll(async () => {
    await app?.stop();
    if (mongo) {
      await mongo
        .db(dbName)
        .dropDatabase()
        .catch(() => undefined);
      await mongo.close();
    }
    if (work) rmSync(work, { recursive: true, force: true });
  }, 30_000);

  it('packs the built package: dist, its types, package.json; no sources, no specs', () => {
    expect(packed).toEqual(expect.arrayContaining(['package.json', 'dist/index.js', 'dist/index.d.ts']));
    if (existsSync(join(REPO, 'packages', 'nest-idempotency', 'README.md'))) expect(packed).toContain('README.md');
    expect(packed.filter((path) => /\.(spec|int-spec|e2e-spec)\./.test(path))).toEqual([]);
    expect(packed.filter((path) => path.startsWith('src/') || path.startsWith('test/'))).toEqual([]);
    // Besides dist/: the manifest, the README, the licence and the contract the README links (docs/contract.md).
    const besideDist = ['package.json', 'README.md', 'LICENSE', 'docs/contract.md'];
    expect(packed.filter((path) => !besideDist.includes(path) && !path.startsWith('dist/'))).toEqual([]);
    expect(packed).toContain('docs/contract.md');
    // Publishable: its licence travels with it; source maps stay out (they doubled the unpacked size, naming no sources).
    expect(packed).toContain('LICENSE');
    expect(packed.filter((path) => path.endsWith('.map'))).toEqual([]);
  });

  it('installs the package from the tarball, the required peers, and none of the optional ones', () => {
    const installed = join(project, 'node_modules', ...PACKAGE.split('/'));
    // A copy extracted from the tarball, not a link back into the repository.
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(realpathSync(installed).startsWith(project + sep)).toBe(true);
    expect(existsSync(join(installed, 'dist', 'index.js'))).toBe(true);
    for (const name of OPTIONAL_PEERS)
      expect({ name, present: existsSync(join(project, 'node_modules', name)) }).toEqual({ name, present: false });
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual([PACKAGE, ...INSTALLED].sort());
    for (const name of INSTALLED) expect({ name, version: manifest.dependencies[name] }).toEqual({ name, version: versionOf(name) });
  });

  it('answers its own route: 201 with the note, and the note and its record commit together', async () => {
    const first = await post('k1', { text: 'buy milk' });
    expect({ status: first.status, body: first.json, output: app!.describe() }).toMatchObject({
      status: 201,
      body: { id: expect.stringMatching(/^note_/), text: 'buy milk' },
    });
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.headers.get('location')).toBe(`/notes/${first.json.id}`);
    expect(first.headers.get('idempotent-replayed')).toBeNull();

    // 5. The same key and body: the stored answer, byte for byte, and the handler's work is not done again.
    const replay = await post('k1', { text: 'buy milk' });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(replay.headers.get('location')).toBe(first.headers.get('location'));

    // The same key with another body: refused, the first note is untouched.
    const reused = await post('k1', { text: 'buy bread' });
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(reused.json).toMatchObject({ status: 422, code: 'idempotency_key_reused' });

    // No key at all: refused before the handler.
    const keyless = await post(undefined, { text: 'buy eggs' });
    expect(keyless.status).toBe(400);
    expect(keyless.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(keyless.json).toMatchObject({ status: 400, code: 'idempotency_key_missing' });

    const db = mongo.db(dbName);
    const notes = await db.collection('notes').find().toArray();
    expect(notes).toEqual([{ _id: first.json.id, tenant: 'acme', text: 'buy milk' }]);
    const records = await db.collection('idempotency_records').find().toArray();
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: 'complete' });
  });
});
