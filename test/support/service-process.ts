// The built service (dist/src/main.js) as a real child process, for the tests
// that need what an in-process app cannot give: a SIGKILL, a SIGTERM, a config
// error at boot, two instances on one database. Build first (`npm test` does).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MongoClient, type Db } from 'mongodb';
import { orderBody } from './fixtures.js';

export const MAIN_JS = fileURLToPath(new URL('../../dist/src/main.js', import.meta.url));
export const ACME_SECRET = 'acme-secret-0123456789';
export const ACME_AUTH = { Authorization: `Bearer ${ACME_SECRET}` };

const KEEP_LINES = 200;
// A boot, not a claim: on a loaded 2-core machine (load 18) a Nest boot took more than 20 s (issue 33 item 6).
const READY_TIMEOUT_MS = 45_000;

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcessOptions {
  /** MONGODB_DB_NAME; must contain "test". */
  dbName?: string;
  /** PAYMENT_SIMULATOR_DB_NAME; defaults to `${dbName}_psp`. */
  simulatorDbName?: string;
  /** Per-scenario variables; `undefined` removes a variable the defaults would set. */
  env?: Record<string, string | undefined>;
  /** Poll GET /health/ready until 200 (default true). */
  waitReady?: boolean;
  readyTimeoutMs?: number;
  /** Name used in failure messages. */
  label?: string;
}

export interface ServiceProcess {
  readonly label: string;
  readonly pid: number;
  readonly port: number;
  readonly baseUrl: string;
  readonly dbName: string;
  readonly simulatorDbName: string;
  readonly child: ChildProcess;
  /** Null while running. */
  exitStatus(): ProcessExit | null;
  /** Resolves when the process has exited (rejects after timeoutMs, default 15 s). */
  waitForExit(timeoutMs?: number): Promise<ProcessExit>;
  /** Sends the signal (default SIGKILL) if still running; does not wait. */
  kill(signal?: NodeJS.Signals): void;
  /** Last ~200 lines of each stream. */
  stdout(): string;
  /**
   * Resolves with stdout once it contains text (rejects after timeoutMs, default 5 s, with both streams).
   * The service's log lines reach stdout in batches, at least every 200 ms (logging.module.ts), so an answer
   * over HTTP can come before the line that was logged before it.
   */
  waitForStdout(text: string, timeoutMs?: number): Promise<string>;
  stderr(): string;
  /** Both streams and the exit status, for failure messages. */
  describe(): string;
}

const children = new Set<ServiceProcess>();

/** A TCP port that was free a moment ago (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (!address || typeof address === 'string') return reject(new Error('no port'));
      server.close(() => resolve(address.port));
    });
  });
}

/** Unique database name for one scenario (contains "test"). */
export function scenarioDbName(prefix: string): string {
  const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  return `test_${prefix}_${suffix}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 58); // + '_psp' stays within MONGODB_DB_NAME's 63
}

/**
 * The environment of the child: nothing inherited but PATH/HOME (a developer's
 * shell or the Jest process must not leak in), the run's MONGODB_URI, and the
 * test defaults. The working directory is the OS temp dir, so a `.env` in the
 * repository is never loaded.
 */
function childEnv(port: number, dbName: string, simulatorDbName: string, extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MONGODB_URI: process.env.MONGODB_URI,
    MONGODB_DB_NAME: dbName,
    PAYMENT_SIMULATOR_DB_NAME: simulatorDbName,
    PORT: String(port),
    HOST: '127.0.0.1',
    NODE_ENV: 'test',
    API_KEYS: `acme:${ACME_SECRET}:orders+admin+privacy`,
    LOG_LEVEL: 'warn',
    OUTBOX_RELAY_INTERVAL_MS: '3600000',
    NO_COLOR: '1',
    ...extra,
  };
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/** Spawns the service; does not wait for readiness. */
export async function spawnService(options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run \`npm run build\` first`);
  const dbName = options.dbName ?? scenarioDbName('proc');
  const simulatorDbName = options.simulatorDbName ?? `${dbName}_psp`;
  if (!dbName.includes('test') || !simulatorDbName.includes('test')) throw new Error('Test databases must contain "test" in their name');
  const port = await freePort();
  const env = childEnv(port, dbName, simulatorDbName, options.env ?? {});
  const label = options.label ?? `service:${port}`;
  const child = spawn(process.execPath, [MAIN_JS], { env, cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });

  const out: string[] = [];
  const err: string[] = [];
  collectLines(child.stdout, out);
  collectLines(child.stderr, err);
  let exit: ProcessExit | null = null;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal };
    });
    // 'close' comes after 'exit' once stdout/stderr are drained: every line the process wrote is captured.
    child.once('close', (code, signal) => {
      exit ??= { code, signal };
      resolve(exit);
    });
    // Spawn failures surface as 'error' with no 'exit'.
    child.once('error', (error) => {
      err.push(`spawn error: ${error.message}`);
      exit ??= { code: -1, signal: null };
      resolve(exit);
    });
  });

  const service: ServiceProcess = {
    label,
    pid: child.pid ?? -1,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    dbName,
    simulatorDbName,
    child,
    exitStatus: () => exit,
    waitForExit: (timeoutMs = 15_000) =>
      withTimeout(exited, timeoutMs, () => `${label} did not exit within ${timeoutMs} ms\n${service.describe()}`),
    kill: (signal = 'SIGKILL') => {
      if (exit === null && child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    stdout: () => out.join('\n'),
    waitForStdout: (text, timeoutMs = 5_000) =>
      pollUntil(
        async () => service.stdout().includes(text) && service.stdout(),
        timeoutMs,
        () => `${label} did not print ${JSON.stringify(text)}\n${service.describe()}`,
        50,
      ),
    stderr: () => err.join('\n'),
    describe: () =>
      `[${label} pid ${child.pid} exit ${JSON.stringify(exit)}]\n--- stdout (last lines) ---\n${out.join('\n')}\n--- stderr (last lines) ---\n${err.join('\n')}`,
  };
  children.add(service);
  void exited.then(() => children.delete(service));
  return service;
}

/** Spawns the service and waits until GET /health/ready answers 200. */
export async function startService(options: ServiceProcessOptions = {}): Promise<ServiceProcess> {
  const service = await spawnService(options);
  if (options.waitReady === false) return service;
  try {
    await waitReady(service, options.readyTimeoutMs ?? READY_TIMEOUT_MS);
  } catch (error) {
    service.kill('SIGKILL');
    await service.waitForExit(5_000).catch(() => undefined);
    throw error;
  }
  return service;
}

async function waitReady(service: ServiceProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (service.exitStatus()) throw new Error(`${service.label} exited before it was ready\n${service.describe()}`);
    try {
      const res = await httpRequest(service.baseUrl, { method: 'GET', path: '/health/ready', timeoutMs: 2_000 });
      if (res.status === 200) return;
      last = `HTTP ${res.status} ${res.text.slice(0, 200)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`${service.label} not ready within ${timeoutMs} ms (last: ${last})\n${service.describe()}`);
}

/**
 * Stops every child still running (afterEach/afterAll) and waits for them to go:
 * SIGTERM first (the pool closes cleanly, no reset noise from the database),
 * SIGKILL after graceMs.
 */
export async function killAllServices(graceMs = 3_000): Promise<void> {
  const running = [...children];
  await Promise.all(
    running.map(async (service) => {
      service.kill(graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
      if (
        await service.waitForExit(graceMs).then(
          () => true,
          () => false,
        )
      )
        return;
      service.kill('SIGKILL');
      await service.waitForExit(5_000).catch(() => undefined);
    }),
  );
}

// Last resort if a test file dies without its afterAll: no orphan servers.
process.once('exit', () => {
  for (const service of children) service.kill('SIGKILL');
});

function collectLines(stream: NodeJS.ReadableStream, lines: string[]): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    if (lines.length > KEEP_LINES) lines.splice(0, lines.length - KEEP_LINES);
  });
  stream.on('end', () => {
    if (partial) lines.push(partial);
  });
}

// ---------------------------------------------------------------------------
// HTTP: node:http with a fresh connection per request (agent: false), so a
// test knows exactly which TCP connection carries which request, and a
// dropped connection rejects instead of being retried by a pool.

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

export interface HttpRequestOptions {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
}

export function httpRequest(baseUrl: string, options: HttpRequestOptions): Promise<HttpResponse> {
  const url = new URL(options.path, baseUrl);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method: options.method, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('response aborted')));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.setTimeout(options.timeoutMs ?? 15_000, () => req.destroy(new Error(`timeout after ${options.timeoutMs ?? 15_000} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export { orderBody };

/** POST /v1/orders as tenant acme with the given Idempotency-Key. */
export function postOrder(baseUrl: string, key: string, body: unknown = orderBody(), timeoutMs?: number): Promise<HttpResponse> {
  return httpRequest(baseUrl, { method: 'POST', path: '/v1/orders', headers: { ...ACME_AUTH, 'Idempotency-Key': key }, body, timeoutMs });
}

// ---------------------------------------------------------------------------
// Database access from the test process.

export interface Databases {
  db: Db;
  simulatorDb: Db;
}

export async function connectMongo(): Promise<MongoClient> {
  const uri = process.env.MONGODB_URI;
  if (!uri) throw new Error('MONGODB_URI is not set: run the tests through `npm test` (globalSetup)');
  return MongoClient.connect(uri, { serverMonitoringMode: 'poll', serverSelectionTimeoutMS: 5_000 });
}

export function databasesOf(client: MongoClient, service: Pick<ServiceProcess, 'dbName' | 'simulatorDbName'>): Databases {
  return { db: client.db(service.dbName), simulatorDb: client.db(service.simulatorDbName) };
}

/** Empties a scenario's collections (the emulator has no dropDatabase) to keep its memory small. */
export async function emptyDatabases({ db, simulatorDb }: Databases): Promise<void> {
  for (const name of ['idempotency_records', 'orders', 'payments', 'ledger_entries', 'outbox_events']) {
    await db.collection(name).deleteMany({});
  }
  await simulatorDb.collection('charges').deleteMany({});
}

/** Orders whose idempotency record is the (scoped) client key `key`. */
export async function ordersForKey(db: Db, key: string): Promise<Array<Record<string, any>>> {
  const all = await db.collection('orders').find({}).toArray();
  return all.filter((order) => typeof order.idempotency?.recordId === 'string' && order.idempotency.recordId.endsWith(`:${key}`));
}

export const succeededCharges = (simulatorDb: Db) => simulatorDb.collection('charges').countDocuments({ status: 'succeeded' });

// ---------------------------------------------------------------------------

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value; throws with `describe()` at the deadline. */
export async function pollUntil<T>(
  check: () => Promise<T | null | undefined | false>,
  timeoutMs: number,
  describe: () => string | Promise<string>,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() >= deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${await describe()}`);
    await sleep(intervalMs);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** One HTTP call's answer (or the error it ended in) and how long it took: what the store-stall tests judge. */
export interface Timed {
  res: HttpResponse | null;
  error?: string;
  ms: number;
}

export async function timed(call: () => Promise<HttpResponse>): Promise<Timed> {
  const started = Date.now();
  try {
    return { res: await call(), ms: Date.now() - started };
  } catch (error) {
    return { res: null, error: (error as Error).message, ms: Date.now() - started };
  }
}
