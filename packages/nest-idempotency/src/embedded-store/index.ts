import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { SerializingProxy, type SerializingProxyStats } from './serializing-proxy.js';

export { SerializingProxy, type SerializingProxyOptions, type SerializingProxyStats } from './serializing-proxy.js';
/**
 * The wire-protocol pieces the proxy is made of, for tools that read or rewrite
 * MongoDB's wire (a command counter, a proxy that injects faults in tests).
 */
export {
  commandOf,
  flagBits,
  helloThroughProxy,
  MessageFramer,
  MORE_TO_COME,
  OP_MSG,
  OP_QUERY,
  opMsg,
  replyOf,
  withReplyDocument,
  type WireMessage,
} from './wire-protocol.js';

/**
 * The npm package that holds the jongodb emulator's binary (an optional peer:
 * install it as a dev dependency). Published for linux-x64 with glibc only.
 */
export const EMULATOR_PACKAGE = '@jongodb/memory-server-bin-linux-x64-gnu';

/** What the embedded store is not: read before trusting a result obtained on it. */
export const EMBEDDED_STORE_CAVEATS =
  'development and tests only, never production: an emulator, not MongoDB; transactions run one at a time (serialized ' +
  'by a proxy: no true snapshot-isolation interleavings, write conflicts only when injected); TTL indexes never expire ' +
  'documents; no change streams; data in memory only, gone when the store stops; inserts slow down as a collection ' +
  'grows; linux-x64 (glibc) only; performance figures on it say nothing about MongoDB';

export interface EmbeddedStoreOptions {
  /** Probability (0 <= rate < 1) that a write inside a transaction is answered with WriteConflict, to exercise retry paths. */
  writeConflictRate?: number;
  /** Where the emulator's own complaints go (default: stderr, without its per-disconnect noise). */
  log?: (line: string) => void;
  /** How long to wait for the emulator to start (default 10 s). */
  startTimeoutMs?: number;
}

export interface EmbeddedStore {
  /** A replica-set URI for `MongooseModule.forRoot` / `MONGODB_URI` (through the proxy, with the pool and heartbeats it needs). */
  uri: string;
  /** What the serializing proxy did so far. */
  stats: SerializingProxyStats;
  /** The emulator's own address, past the proxy: only to show what the proxy prevents (never connect through it otherwise). */
  unserializedUri: string;
  /** The emulator's process id, for tests that freeze or kill the store. */
  serverPid: number | undefined;
  /** Called if the emulator dies on its own (not through `stop`). */
  onUnexpectedExit(listener: (reason: string) => void): void;
  stop(): Promise<void>;
}

/**
 * A single-node MongoDB replica set with nothing but Node and npm: the jongodb
 * emulator (`EMULATOR_PACKAGE`) behind a serializing proxy, the embedded store
 * the package's own repository develops and tests on. No Docker, no download
 * at run time (the binary comes with the npm package), no internet.
 *
 * The proxy exists because the emulator loses committed writes when
 * transactions overlap (each commits its snapshot over the current state
 * unchecked): behind it, the emulator only ever sees them one at a time.
 * See EMBEDDED_STORE_CAVEATS: for development and tests, never production.
 */
export async function startEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
  const writeConflictRate = options.writeConflictRate ?? 0;
  if (!(writeConflictRate >= 0 && writeConflictRate < 1))
    throw new RangeError(`writeConflictRate must be in [0, 1), got ${writeConflictRate}`);
  const log = options.log ?? ((line: string) => process.stderr.write(`[jongodb] ${line}\n`));
  const child = spawnTiedToUs(emulatorBinary(), ['--port=0', '--topology-profile=singleNodeReplicaSet']);
  // The emulator reports every client disconnect on stderr; pass the rest on.
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (!/tcp client io failure/.test(line)) log(line);
  });
  const emulatorUri = await readyUri(child, options.startTimeoutMs ?? 10_000);
  const [, host, port] = /^mongodb:\/\/([^:/]+):(\d+)/.exec(emulatorUri) ?? [];
  const proxy = await SerializingProxy.start({ upstream: { host, port: Number(port) }, writeConflictRate });
  let stopping = false;
  return {
    // Polling heartbeats: the emulator answers no streaming (awaitable) hello, which drivers use by default on a replica set.
    uri: `${proxy.clientUri(emulatorUri)}&serverMonitoringMode=poll`,
    stats: proxy.stats,
    unserializedUri: emulatorUri,
    serverPid: child.pid,
    onUnexpectedExit: (listener) => {
      child.once('exit', (code, signal) => stopping || listener(`jongodb emulator exited (${signal ?? `code ${code}`})`));
    },
    stop: async () => {
      stopping = true;
      await proxy.close();
      await stopChild(child);
    },
  };
}

function emulatorBinary(): string {
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve(`${EMULATOR_PACKAGE}/package.json`);
  } catch {
    throw new Error(
      `The embedded store needs the emulator package: npm install --save-dev ${EMULATOR_PACKAGE} (linux-x64 with glibc only). ` +
        'Elsewhere, use a MongoDB replica set (Docker, or mongodb-memory-server where it can download mongod).',
    );
  }
  return join(dirname(manifest), 'bin', 'jongodb');
}

const SETPRIV = '/usr/bin/setpriv';

/**
 * Spawns the emulator so that it dies with this process, even on SIGKILL
 * (a crashed test run): util-linux's setpriv asks the kernel for SIGKILL on
 * parent death. In a process group of its own, so a Ctrl-C reaches the app
 * and not the store under it first. Without setpriv, a plain spawn.
 */
function spawnTiedToUs(binary: string, args: string[]): ChildProcess {
  const options = { stdio: ['ignore', 'pipe', 'pipe'] as ('ignore' | 'pipe')[] };
  if (!existsSync(SETPRIV)) return spawn(binary, args, options);
  return spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', binary, ...args], { ...options, detached: true });
}

function readyUri(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`jongodb emulator did not start within ${timeoutMs} ms`)), timeoutMs);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^JONGODB_URI=(\S+)/.exec(line);
      if (!match) return;
      clearTimeout(timer);
      resolve(match[1]);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`jongodb emulator exited early with code ${code}`));
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 2000).unref();
  });
}
