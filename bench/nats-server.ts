/**
 * A throwaway `nats-server -js` for the tests and the benchmark: a real
 * process on a free loopback port with its own store directory, SIGKILLed and
 * restarted on that store when a test wants a broker crash. Never a mock: the
 * relay is tested against the server it will talk to.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
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
  /** The client port (a cluster's nodes know each other's before they start); a free one when unset. */
  port?: number;
  /** false: a server without JetStream (no -js), whose clients connect but whose JetStream API has no responders. */
  jetstream?: boolean;
}

export async function startNatsServer(binary: string, options: NatsServerOptions = {}): Promise<NatsServer> {
  const port = options.port ?? (await freePort());
  const storeDir = mkdtempSync(join(tmpdir(), 'nats-test-'));
  const args = [...(options.jetstream === false ? [] : ['-js']), ...(options.args ?? [])];
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

export interface NatsCluster {
  readonly nodes: NatsServer[];
  /** Every node's URL, comma-separated: NATS_URL's form for a cluster's seeds. */
  readonly urls: string;
  stop(): Promise<void>;
}

/**
 * A JetStream cluster of `size` nodes on loopback (names n1, n2, ...), each a
 * NatsServer that can be killed and restarted on its store; resolves once the
 * cluster has elected its JetStream meta leader, so a stream can be created.
 */
export async function startNatsCluster(binary: string, size = 3): Promise<NatsCluster> {
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < size; i++) clientPorts.push(await freePort());
  for (let i = 0; i < size; i++) routePorts.push(await freePort());
  const route = (i: number) => `nats://127.0.0.1:${routePorts[i]}`;
  const nodes: NatsServer[] = [];
  const cluster: NatsCluster = {
    nodes,
    get urls() {
      return nodes.map((node) => node.url).join(',');
    },
    stop: async () => {
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
  try {
    for (let i = 0; i < size; i++) {
      const routes = routePorts.flatMap((_, j) => (j === i ? [] : [route(j)])).join(',');
      const args = ['--server_name', `n${i + 1}`, '--cluster_name', 'orders-test', '--cluster', route(i), '--routes', routes];
      nodes.push(await startNatsServer(binary, { port: clientPorts[i], args }));
    }
    await metaLeaderElected(cluster.urls.split(','), 30_000);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/** Waits until JetStream answers account info: the cluster has a meta leader. */
async function metaLeaderElected(urls: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await connect({ servers: urls, reconnect: false });
      try {
        await (await jetstreamManager(connection, { timeout: 1000 })).getAccountInfo();
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`the NATS cluster elected no JetStream leader within ${timeoutMs} ms: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function launch(binary: string, port: number, storeDir: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...args], {
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
