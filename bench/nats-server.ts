/**
 * A throwaway `nats-server -js` for the tests and the benchmark: a real
 * process on a free loopback port with its own store directory, SIGKILLed and
 * restarted on that store when a test wants a broker crash. Never a mock: the
 * relay is tested against the server it will talk to.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** SIGKILL: a crashed broker; what it acknowledged is on its store (2.9 syncs to disk on its own schedule). */
  kill(): Promise<void>;
  /** Starts again on the same port and store. */
  start(): Promise<void>;
  /** SIGTERM and remove the store. */
  stop(): Promise<void>;
}

const CANDIDATES = ['nats-server', '/usr/sbin/nats-server', '/usr/local/bin/nats-server'];

/** The nats-server binary, or the reason to print when there is none. */
export function findNatsServer(): { binary: string } | { missing: string } {
  for (const binary of CANDIDATES) {
    const found = spawnSync(binary, ['--version'], { encoding: 'utf8' });
    if (!found.error && found.status === 0) return { binary };
  }
  return { missing: 'nats-server is not installed (apt-get install nats-server; .ci/run does)' };
}

export interface NatsServerOptions {
  /** More command-line options: TLS (`--tls ...`), authorization (`--user`, `--pass`, `--auth`). */
  args?: string[];
  /** The URL's scheme: `tls` for a server that requires TLS. */
  scheme?: 'nats' | 'tls';
}

export async function startNatsServer(binary: string, options: NatsServerOptions = {}): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'nats-test-'));
  const args = options.args ?? [];
  let child: ChildProcess | null = await launch(binary, port, storeDir, args);
  const onExit = () => child?.kill('SIGKILL');
  process.once('exit', onExit);
  const end = async (signal: NodeJS.Signals) => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const gone = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await gone;
  };
  return {
    url: `${options.scheme ?? 'nats'}://127.0.0.1:${port}`,
    port,
    storeDir,
    kill: () => end('SIGKILL'),
    start: async () => {
      await end('SIGKILL');
      child = await launch(binary, port, storeDir, args);
    },
    stop: async () => {
      process.removeListener('exit', onExit);
      await end('SIGTERM');
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

async function launch(binary: string, port: number, storeDir: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server on ${port} not ready within 15 s: ${output.slice(-500)}`)), 15_000);
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`nats-server exited with ${code} before it was ready: ${output.slice(-500)}`)));
  });
  child.stderr.removeAllListeners('data');
  child.stderr.resume();
  return child;
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
