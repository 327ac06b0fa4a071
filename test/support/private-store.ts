// A MongoDB server of the test's own, in a child process whose pid the test
// holds: to stop it, or to freeze it with SIGSTOP (a server that accepts
// connections and never answers - what a hung VM, a stuck disk or a long GC
// pause look like from the client). Never the run's shared server.
// A real mongod when one is on this machine (MONGOMS_SYSTEM_BINARY or PATH),
// else the jongodb emulator.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

export interface PrivateStore {
  readonly uri: string;
  readonly pid: number;
  readonly description: string;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startPrivateStore(): Promise<PrivateStore> {
  const mongod = findMongod();
  return mongod ? startMongod(mongod) : startEmulator();
}

function findMongod(): string | undefined {
  if (process.env.MONGOMS_SYSTEM_BINARY && existsSync(process.env.MONGOMS_SYSTEM_BINARY)) return process.env.MONGOMS_SYSTEM_BINARY;
  return (process.env.PATH ?? '')
    .split(delimiter)
    .map((dir) => join(dir, 'mongod'))
    .find((candidate) => existsSync(candidate));
}

async function startMongod(binary: string): Promise<PrivateStore> {
  const { MongoMemoryReplSet } = await import('mongodb-memory-server-core');
  const replSet = await MongoMemoryReplSet.create({ binary: { systemBinary: binary }, replSet: { count: 1, storageEngine: 'wiredTiger' } });
  await replSet.waitUntilRunning();
  const pid = replSet.servers[0].instanceInfo?.instance.mongodProcess?.pid;
  if (!pid) throw new Error('mongodb-memory-server started a mongod without a pid');
  return handle(replSet.getUri(), pid, `mongod (${binary})`, async () => {
    process.kill(pid, 'SIGCONT');
    await replSet.stop();
  });
}

async function startEmulator(): Promise<PrivateStore> {
  const manifest = createRequire(import.meta.url).resolve('@jongodb/memory-server-bin-linux-x64-gnu/package.json');
  const child = spawn(join(dirname(manifest), 'bin', 'jongodb'), ['--port=0', '--topology-profile=singleNodeReplicaSet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.resume();
  const uri = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the emulator did not start within 10 s')), 10_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^JONGODB_URI=(\S+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code}`)));
  });
  return handle(uri, child.pid!, 'jongodb emulator', () => stopChild(child));
}

function handle(uri: string, pid: number, description: string, stop: () => Promise<void>): PrivateStore {
  // A frozen child outlives a crashed test file otherwise.
  const onExit = () => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);
  return {
    uri,
    pid,
    description,
    freeze: () => process.kill(pid, 'SIGSTOP'),
    thaw: () => process.kill(pid, 'SIGCONT'),
    stop: async () => {
      process.removeListener('exit', onExit);
      await stop();
    },
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  });
}
