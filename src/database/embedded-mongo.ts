import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * Where the MongoDB replica set comes from, in order of preference:
 *  - `uri`: MONGODB_URI was given (a real deployment, compose, CI with a server);
 *  - `mongod`: mongodb-memory-server's single-node replica set on a real
 *    `mongod` binary already on this machine (never downloaded here);
 *  - `emulator`: the jongodb emulator from npm, for machines with neither.
 * Used by main.ts (embedded default) and by the test harness (globalSetup).
 */
export type MongoBackendKind = 'uri' | 'mongod' | 'emulator';

export interface MongoBackend {
  kind: MongoBackendKind;
  uri: string;
  description: string;
  stop(): Promise<void>;
}

export const EMULATOR_GAPS =
  'concurrent transactions on one document can both commit (lost update), write conflicts surface at commit ' +
  'without labels, an aborted losing transaction may keep its writes, TTL indexes never expire documents, ' +
  'no change streams; benchmark figures on it say nothing about MongoDB';

const EMULATOR_PACKAGE = '@jongodb/memory-server-bin-linux-x64-gnu';

export async function resolveMongoBackend(env: NodeJS.ProcessEnv = process.env): Promise<MongoBackend> {
  if (env.MONGODB_URI) {
    return { kind: 'uri', uri: env.MONGODB_URI, description: 'MONGODB_URI', stop: async () => {} };
  }
  const binary = await findMongodBinary(env);
  if (binary) return startMemoryReplSet(binary);
  return startEmulator();
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
  return {
    kind: 'mongod',
    uri: replSet.getUri(),
    description: `mongodb-memory-server replica set (${binary})`,
    stop: async () => {
      await replSet.stop();
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
      `No MongoDB available: set MONGODB_URI to a replica set, install mongod (or set MONGOMS_SYSTEM_BINARY), ` +
        `or install the optional emulator package ${EMULATOR_PACKAGE} (linux-x64 only).`,
    );
  }
  return join(dirname(manifest), 'bin', 'jongodb');
}

async function startEmulator(): Promise<MongoBackend> {
  const child = spawn(emulatorBinary(), ['--port=0', '--topology-profile=singleNodeReplicaSet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The emulator reports every client disconnect on stderr; pass the rest through.
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (!/tcp client io failure/.test(line)) process.stderr.write(`[jongodb] ${line}\n`);
  });
  const uri = await readReadyLine(child);
  return {
    kind: 'emulator',
    uri,
    description: 'jongodb emulator (single-node replica set profile)',
    stop: () => stopChild(child),
  };
}

function readReadyLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('jongodb emulator did not start within 10 s')), 10_000);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
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
