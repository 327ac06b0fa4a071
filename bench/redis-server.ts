/**
 * A throwaway `redis-server` for the test run and the benchmark: a real
 * process on a free port, nothing persisted (`--save '' --appendonly no`),
 * killed when done. Never a mock: the fast path is tested against the server
 * it will talk to. Tests reach it through the globalSetup
 * (test/support/global-setup.mjs); the chaos test starts one of its own to kill.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** SIGKILL: what a crashed or OOM-killed Redis looks like to its clients. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty (nothing was persisted). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The redis-server binary on PATH, or null with the reason to print when there is none. */
export function findRedisServer(): { binary: string } | { missing: string } {
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) return { missing: 'redis-server is not on PATH (apt-get install redis-server)' };
  return { binary: 'redis-server' };
}

/** `args`: more redis-server options, e.g. a tiny `--maxmemory` for a test of a full Redis. */
export async function startRedisServer(port?: number, args: string[] = []): Promise<RedisServer> {
  const chosen = port ?? (await freePort());
  const launch = (at: number) => launchWith(at, args);
  let child = await launch(chosen);
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);
  const killed = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await gone;
  };
  return {
    url: `redis://127.0.0.1:${chosen}`,
    port: chosen,
    get pid() {
      return child.pid ?? -1;
    },
    kill: () => killed('SIGKILL'),
    restart: async () => {
      await killed('SIGKILL');
      child = await launch(chosen);
    },
    stop: async () => {
      process.removeListener('exit', onExit);
      await killed('SIGTERM');
    },
  };
}

async function launchWith(port: number, args: string[]): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const failed = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code} before it was ready`)));
  });
  await Promise.race([waitForPort(port, 5000), failed]);
  return child;
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await answersPing(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`redis-server on port ${port} not ready within ${timeoutMs} ms`);
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
