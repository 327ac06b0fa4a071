import { once } from 'node:events';
import net from 'node:net';
import { BSON } from 'mongodb';
import { FifoLock } from './fifo-lock.js';
import { commandOf, flagBits, helloThroughProxy, MessageFramer, MORE_TO_COME, opMsg, type WireMessage } from './wire-protocol.js';

/**
 * A TCP proxy in front of the jongodb emulator that admits one transaction at
 * a time. The emulator loses committed writes whenever transactions overlap
 * (each works on a snapshot copy and its commit writes its documents over the
 * current state unchecked), so behind this proxy it is only ever asked to run
 * transactions one after another - which it does correctly - and concurrency
 * tests and benchmark checks become meaningful. Optionally it answers a
 * transactional write with the WriteConflict a real mongod gives, so the
 * callers' retry paths run too. Development and tests only: never in front of
 * a real MongoDB.
 *
 * Bytes are forwarded unchanged, except hello replies (which must name the
 * proxy, not the emulator, or the driver connects past it). Per connection the
 * driver sends one request at a time, so a request that waits for the lock
 * keeps its pool connection: clients need a large pool (see `clientUri`).
 */
export interface SerializingProxyOptions {
  upstream: { host: string; port: number };
  host?: string;
  port?: number;
  /** Probability that a write inside a transaction is answered with WriteConflict (112). */
  writeConflictRate?: number;
  /** A transaction that holds the lock and sends nothing for this long is aborted (its client died or hangs). */
  idleTimeoutMs?: number;
  /** Warn when a write outside any transaction waited this long behind one open transaction. */
  slowWriteWarningMs?: number;
  random?: () => number;
  log?: (message: string) => void;
}

export interface SerializingProxyStats {
  transactions: number;
  injectedConflicts: number;
  idleAborts: number;
  supersededAborts: number;
  slowWriteWarnings: number;
  /** The last aborts the proxy made (not the injected conflicts), oldest first: when, and why. */
  aborts: { at: number; reason: string }[];
}

/** How many aborts `stats.aborts` keeps. */
const ABORTS_KEPT = 20;

interface OpenTransaction {
  key: string;
  lsid: BSON.Document;
  txnNumber: BSON.Long;
  idleTimer?: NodeJS.Timeout;
}

/** What to do when the reply to a forwarded request arrives, or when it never will. */
interface InFlight {
  rewriteHello: boolean;
  done?: () => void;
  lost?: () => void;
}

const HELLO = new Set(['hello', 'isMaster', 'ismaster']);
const TRANSACTIONAL_WRITES = new Set(['insert', 'update', 'delete', 'findAndModify', 'findandmodify', 'bulkWrite']);
const WRITES = new Set([
  ...TRANSACTIONAL_WRITES,
  'create',
  'createIndexes',
  'drop',
  'dropDatabase',
  'dropIndexes',
  'collMod',
  'renameCollection',
]);
const ENDS_TRANSACTION = new Set(['commitTransaction', 'abortTransaction']);
/** Killed transactions are remembered this long, to answer their zombies. */
const KILLED_MEMORY_MS = 10 * 60_000;
/** An idle timer firing later than this finds its process stalled, not its client idle. */
const STALL_MS = 100;

export class SerializingProxy {
  readonly stats: SerializingProxyStats = {
    transactions: 0,
    injectedConflicts: 0,
    idleAborts: 0,
    supersededAborts: 0,
    slowWriteWarnings: 0,
    aborts: [],
  };
  private readonly lock = new FifoLock();
  private readonly open = new Map<string, OpenTransaction>();
  private readonly openBySession = new Map<string, string>();
  private readonly killed = new Map<string, number>();
  private readonly sockets = new Set<net.Socket>();
  private nextWriteId = 0;
  private nextRequestId = 1 << 30;
  private readonly idleTimeoutMs: number;
  private readonly slowWriteWarningMs: number;
  private readonly writeConflictRate: number;
  private readonly random: () => number;
  private readonly log: (message: string) => void;

  private constructor(
    private readonly options: SerializingProxyOptions,
    private readonly server: net.Server,
  ) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? 5000;
    this.slowWriteWarningMs = options.slowWriteWarningMs ?? 2000;
    this.writeConflictRate = options.writeConflictRate ?? 0;
    this.random = options.random ?? Math.random;
    this.log = options.log ?? ((message) => process.stderr.write(`[serializing-proxy] ${message}\n`));
    server.on('connection', (client) => this.serve(client));
  }

  static async start(options: SerializingProxyOptions): Promise<SerializingProxy> {
    const server = net.createServer();
    const proxy = new SerializingProxy(options, server);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  get address(): string {
    return `${this.options.host ?? '127.0.0.1'}:${this.port}`;
  }

  /**
   * The upstream's connection string pointed at the proxy, with a pool large
   * enough that the lock holder always finds a connection while others queue.
   */
  clientUri(upstreamUri: string): string {
    const uri = upstreamUri.replace(/^mongodb:\/\/[^/?]+/, `mongodb://${this.address}`);
    return `${uri}${uri.includes('?') ? '&' : '?'}maxPoolSize=1000`;
  }

  async close(): Promise<void> {
    for (const key of [...this.open.keys()]) this.kill(key, 'proxy closing');
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(client: net.Socket): void {
    const upstream = net.connect(this.options.upstream.port, this.options.upstream.host);
    const inFlight = new Map<number, InFlight>();
    const requests = new MessageFramer();
    const replies = new MessageFramer();
    let queue = Promise.resolve();
    this.sockets.add(client).add(upstream);

    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      for (const request of inFlight.values()) request.lost?.();
      inFlight.clear();
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);

    const forward = (message: WireMessage, then: Omit<InFlight, 'rewriteHello'> = {}, rewriteHello = false) => {
      // The client left while this request waited for the lock: no reply will ever come.
      if (upstream.destroyed) return then.lost?.();
      if (flagBits(message) & MORE_TO_COME) {
        upstream.write(message.bytes);
        then.done?.();
        return;
      }
      inFlight.set(message.requestId, { rewriteHello, ...then });
      upstream.write(message.bytes);
    };
    const answer = (message: WireMessage, document: BSON.Document) =>
      client.write(opMsg(this.nextRequestId++, message.requestId, document));

    client.on('data', (chunk) => {
      let messages: WireMessage[];
      try {
        messages = requests.push(chunk);
      } catch (error) {
        this.log(`closing a client connection: ${(error as Error).message}`);
        return closeBoth();
      }
      for (const message of messages) {
        // One request at a time per connection, in order: the driver never pipelines.
        queue = queue
          .then(() => this.route(message, forward, answer))
          .catch((error: unknown) => {
            this.log(`closing a client connection: ${(error as Error).message}`);
            closeBoth();
          });
      }
    });
    upstream.on('data', (chunk) => {
      for (const reply of replies.push(chunk)) {
        const request = inFlight.get(reply.responseTo);
        inFlight.delete(reply.responseTo);
        client.write(request?.rewriteHello ? this.rewriteHello(reply) : reply.bytes);
        request?.done?.();
      }
    });
  }

  private async route(
    message: WireMessage,
    forward: (message: WireMessage, then?: Omit<InFlight, 'rewriteHello'>, rewriteHello?: boolean) => void,
    answer: (message: WireMessage, document: BSON.Document) => void,
  ): Promise<void> {
    const command = commandOf(message);
    const name = command ? Object.keys(command)[0] : undefined;
    if (!command || !name) return forward(message);
    if (HELLO.has(name)) return forward(message, {}, true);
    if (command.autocommit === false && command.txnNumber !== undefined && command.lsid) {
      return this.routeTransactional(message, name, command, forward, answer);
    }
    if (name === 'endSessions') {
      for (const lsid of (command.endSessions ?? []) as BSON.Document[]) {
        const key = this.openBySession.get(sessionId(lsid));
        if (key) this.kill(key, 'session ended');
      }
      return forward(message);
    }
    if (WRITES.has(name) || isWritingAggregate(name, command)) return this.routeWrite(message, name, forward);
    forward(message);
  }

  private async routeTransactional(
    message: WireMessage,
    name: string,
    command: BSON.Document,
    forward: (message: WireMessage, then?: Omit<InFlight, 'rewriteHello'>) => void,
    answer: (message: WireMessage, document: BSON.Document) => void,
  ): Promise<void> {
    const session = sessionId(command.lsid as BSON.Document);
    const txnNumber = BSON.Long.fromValue(command.txnNumber as BSON.Long);
    const key = `${session}:${txnNumber.toString()}`;
    if (this.killed.has(key)) return answer(message, noSuchTransaction(txnNumber));

    const earlier = this.openBySession.get(session);
    // A newer transaction on the session ends the older one, as on mongod.
    if (earlier && earlier !== key) this.kill(earlier, 'superseded by a newer transaction on its session');

    if (!this.open.has(key)) {
      // A commit retried after the transaction finished: the upstream knows its outcome.
      if (ENDS_TRANSACTION.has(name) && command.startTransaction !== true) return forward(message);
      this.open.set(key, { key, lsid: command.lsid as BSON.Document, txnNumber });
      this.openBySession.set(session, key);
      // False: killed while it waited (its session ended, or the proxy is closing).
      if (!(await this.lock.acquire(key))) return answer(message, noSuchTransaction(txnNumber));
      this.stats.transactions++;
    }
    const transaction = this.open.get(key)!;
    clearTimeout(transaction.idleTimer);
    transaction.idleTimer = undefined;

    if (TRANSACTIONAL_WRITES.has(name) && this.random() < this.writeConflictRate) {
      this.stats.injectedConflicts++;
      this.kill(key, 'injected write conflict');
      return answer(message, writeConflict());
    }
    const ends = ENDS_TRANSACTION.has(name);
    const armIdle = () => {
      if (!this.open.has(key)) return;
      const armedAt = Date.now();
      const timer = setTimeout(() => {
        // Late by more than a beat: this process stalled (a long GC; in tests the app shares it), and
        // its client could not speak meanwhile. Idleness is counted again from now.
        if (Date.now() - armedAt - this.idleTimeoutMs > STALL_MS) return armIdle();
        // Timers run before the poll for I/O: a command written as a stall ended is read first.
        setImmediate(() => {
          if (transaction.idleTimer !== timer || !this.open.has(key)) return;
          this.stats.idleAborts++;
          this.kill(key, `idle for ${this.idleTimeoutMs} ms`);
        });
      }, this.idleTimeoutMs);
      transaction.idleTimer = timer;
    };
    forward(message, { done: () => (ends ? this.finish(key) : armIdle()), lost: armIdle });
  }

  private async routeWrite(
    message: WireMessage,
    name: string,
    forward: (message: WireMessage, then?: Omit<InFlight, 'rewriteHello'>) => void,
  ): Promise<void> {
    const owner = `write:${this.nextWriteId++}`;
    const blocker = this.lock.holder;
    const warning =
      blocker === undefined
        ? undefined
        : setTimeout(() => {
            if (this.lock.holder !== blocker) return;
            this.stats.slowWriteWarnings++;
            this.log(
              `WARN a '${name}' outside any transaction waited ${this.slowWriteWarningMs} ms behind the open ` +
                `transaction ${blocker}: almost always a write without the session inside a transaction callback`,
            );
          }, this.slowWriteWarningMs);
    await this.lock.acquire(owner);
    clearTimeout(warning);
    const release = () => this.lock.release(owner);
    forward(message, { done: release, lost: release });
  }

  /** The transaction committed or aborted upstream: the next one may run. */
  private finish(key: string): void {
    const transaction = this.open.get(key);
    if (!transaction) return;
    clearTimeout(transaction.idleTimer);
    this.open.delete(key);
    const session = sessionId(transaction.lsid);
    if (this.openBySession.get(session) === key) this.openBySession.delete(session);
    this.lock.release(key);
  }

  /**
   * Ends a transaction its client will not finish: later commands of it get
   * NoSuchTransaction as from mongod, and the upstream drops its state.
   */
  private kill(key: string, reason: string): void {
    const transaction = this.open.get(key);
    if (!transaction || this.killed.has(key)) return;
    const now = Date.now();
    for (const [old, at] of this.killed) if (now - at > KILLED_MEMORY_MS) this.killed.delete(old);
    this.killed.set(key, now);
    clearTimeout(transaction.idleTimer);
    if (reason.startsWith('superseded')) this.stats.supersededAborts++;
    if (!reason.startsWith('injected')) {
      this.log(`aborted transaction ${key}: ${reason}`);
      this.stats.aborts = [...this.stats.aborts, { at: now, reason }].slice(-ABORTS_KEPT);
    }
    // The lock passes on only once the upstream dropped it: the emulator refuses the session's next
    // transaction ("transaction already in progress for this session") while this one is open.
    void this.abortUpstream(transaction).finally(() => this.finish(key));
  }

  /** abortTransaction on a private connection, so no client request waits behind it. */
  private async abortUpstream(transaction: OpenTransaction): Promise<void> {
    const socket = net.connect(this.options.upstream.port, this.options.upstream.host);
    socket.on('error', () => undefined);
    const command = { abortTransaction: 1, lsid: transaction.lsid, txnNumber: transaction.txnNumber, autocommit: false, $db: 'admin' };
    socket.write(opMsg(this.nextRequestId++, 0, command));
    await Promise.race([once(socket, 'data'), new Promise((resolve) => setTimeout(resolve, 2000).unref())]).catch(() => undefined);
    socket.destroy();
  }

  private rewriteHello(reply: WireMessage): Buffer {
    return helloThroughProxy(reply, `${this.options.upstream.host}:${this.options.upstream.port}`, this.address);
  }
}

function sessionId(lsid: BSON.Document): string {
  return (lsid.id as BSON.Binary).toString('hex');
}

function isWritingAggregate(name: string, command: BSON.Document): boolean {
  if (name !== 'aggregate' || !Array.isArray(command.pipeline)) return false;
  const last = command.pipeline.at(-1) as BSON.Document | undefined;
  return !!last && ('$out' in last || '$merge' in last);
}

/** As mongod answers a write that conflicts inside a transaction (the transaction is aborted). */
export function writeConflict(): BSON.Document {
  return {
    ok: 0,
    errmsg:
      'Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.',
    code: 112,
    codeName: 'WriteConflict',
    errorLabels: ['TransientTransactionError'],
  };
}

/** As mongod answers a command of a transaction that was aborted. */
export function noSuchTransaction(txnNumber: BSON.Long): BSON.Document {
  return {
    ok: 0,
    errmsg: `Transaction with { txnNumber: ${txnNumber.toString()} } has been aborted.`,
    code: 251,
    codeName: 'NoSuchTransaction',
    errorLabels: ['TransientTransactionError'],
  };
}
