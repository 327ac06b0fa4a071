import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { CommandCounter } from './command-counter.js';
import { idleCpuRate } from './cpu.js';

/** A built service (`node dist/src/main.js`) running as a child process for the benchmark. */
export interface ServiceProcess {
  name: string;
  baseUrl: string;
  pid: number | undefined;
  /** From spawn to the first 200 of /health/ready: the boot, which a profile should leave out. */
  readyAfterMs: number;
  /** CPU ms per second while idle, measured once after boot; subtracted from per-request CPU. */
  idleCpuMsPerSecond: number;
  /** Store commands per second while idle (the outbox relay's polls...), over the same sample; 0 without a counter. */
  idleCommandsPerSecond: number;
  /** Counts the store commands of this process, when it was started behind one. */
  counter?: CommandCounter;
  /** The child itself (the floor process takes its orders by IPC). */
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Rate limits as production runs them, set above anything the benchmark
 * offers (the configuration's maxima), so that they cost what they cost and
 * refuse nothing; 'off' = 0, no limit (the limits-off rows).
 */
export const BENCH_RATE_LIMITS = { perTenantPerMinute: 1_000_000, perKeyPerMinute: 100_000 } as const;

export interface ServiceOptions {
  name: string;
  /** Repository root (holds dist/src/main.js). */
  root: string;
  mongoUri: string;
  dbName: string;
  simulatorDbName: string;
  disableIdempotency: boolean;
  paymentLatencyMs: number;
  apiKeys: string;
  /** The Redis fast path (REDIS_URL); MongoDB only when absent. */
  redisUrl?: string;
  /** Write a V8 CPU profile of the process into this folder when it exits. */
  cpuProfileDir?: string;
  /** 'on' (default): BENCH_RATE_LIMITS, as deployed; 'off': no limits. */
  rateLimits?: 'on' | 'off';
  /** Route the process's store traffic through this counter. */
  counter?: CommandCounter;
  /** Another entry point than dist/src/main.js (the floor process), started with an IPC channel. */
  script?: string;
  /** Extra environment (wins over the defaults). */
  env?: NodeJS.ProcessEnv;
}

// Four processes boot at once; on a shared 2-core machine at load 15-20 one took over 30 s (a ready service answers in ms).
const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 5_000;

/**
 * Each process's idle CPU again, all at once: what is left out of its CPU per
 * request. Sampled only at its boot, it is the boot's tail (four processes
 * starting on two cores): 65 ms/s for a service that idles at 16-20 ms/s alone.
 */
export async function resampleIdleCpu(processes: ServiceProcess[], sampleMs = 3000): Promise<number[]> {
  const rates = await Promise.all(processes.map((target) => idleCpuRate(target.pid, sampleMs)));
  processes.forEach((target, index) => (target.idleCpuMsPerSecond = rates[index]));
  return rates;
}

export async function startService(options: ServiceOptions): Promise<ServiceProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test', // BENCH_DISABLE_IDEMPOTENCY is refused in production
    HOST: '127.0.0.1',
    PORT: String(port),
    MONGODB_URI: options.counter?.uri ?? options.mongoUri,
    MONGODB_DB_NAME: options.dbName,
    PAYMENT_SIMULATOR_DB_NAME: options.simulatorDbName,
    PAYMENT_SIMULATOR_LATENCY_MS: String(options.paymentLatencyMs),
    API_KEYS: options.apiKeys,
    REAPER_ENABLED: 'false',
    RATE_LIMIT_PER_KEY_PER_MINUTE: String(options.rateLimits === 'off' ? 0 : BENCH_RATE_LIMITS.perKeyPerMinute),
    RATE_LIMIT_PER_TENANT_PER_MINUTE: String(options.rateLimits === 'off' ? 0 : BENCH_RATE_LIMITS.perTenantPerMinute),
    BENCH_DISABLE_IDEMPOTENCY: String(options.disableIdempotency),
    FAULT_INJECTION: 'false',
    SHUTDOWN_GRACE_MS: '2000',
    ...options.env,
  };
  // Request logging at its default level (info), as deployed: its cost is part of every request's.
  if (!options.env?.LOG_LEVEL) delete env.LOG_LEVEL;
  delete env.FAULT_CRASH_AT;
  if (options.redisUrl) env.REDIS_URL = options.redisUrl;
  else delete env.REDIS_URL;
  const profile = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  const child = spawn(process.execPath, [...profile, options.script ?? join(options.root, 'dist', 'src', 'main.js')], {
    cwd: options.root,
    env,
    stdio: options.script ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  const spawnedAt = Date.now();
  const output = keepTail(child);
  const service: ServiceProcess = {
    name: options.name,
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid,
    readyAfterMs: 0,
    idleCpuMsPerSecond: 0,
    idleCommandsPerSecond: 0,
    counter: options.counter,
    child,
    stop: () => stopChild(child),
  };
  try {
    await waitUntilReady(service, child);
    service.readyAfterMs = Date.now() - spawnedAt;
    const commandsBefore = options.counter?.snapshot().commands ?? 0;
    const sampledAt = Date.now();
    service.idleCpuMsPerSecond = await idleCpuRate(child.pid);
    const commandsIdle = (options.counter?.snapshot().commands ?? 0) - commandsBefore;
    service.idleCommandsPerSecond = (commandsIdle * 1000) / (Date.now() - sampledAt);
  } catch (error) {
    await service.stop();
    throw new Error(`${options.name}: ${(error as Error).message}\n--- last output ---\n${output().join('\n')}`);
  }
  return service;
}

async function waitUntilReady(service: ServiceProcess, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited before ready (code ${child.exitCode}, signal ${child.signalCode})`);
    }
    try {
      const response = await fetch(`${service.baseUrl}/health/ready`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`GET /health/ready did not answer 200 within ${READY_TIMEOUT_MS / 1000} s`);
}

/**
 * The last lines the child printed, for the error message when it fails to
 * start. Raw chunks are kept and split only when asked: at the default log
 * level the service prints a line per request, and the benchmark process
 * (which also runs the load) should not pay for splitting them.
 */
function keepTail(child: ChildProcess, max = 40, maxBytes = 64 * 1024): () => string[] {
  const chunks: Buffer[] = [];
  let bytes = 0;
  const collect = (chunk: Buffer) => {
    chunks.push(chunk);
    bytes += chunk.length;
    while (chunks.length > 1 && bytes - chunks[0].length >= maxBytes) bytes -= chunks.shift()!.length;
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return () => Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean).slice(-max);
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Ports handed out by this run: the OS may offer a port again once it is closed, before its service has bound it. */
const handedOut = new Set<number>();

async function freePort(): Promise<number> {
  for (;;) {
    const port = await anyFreePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
