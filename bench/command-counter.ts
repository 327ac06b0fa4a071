import { once } from 'node:events';
import net from 'node:net';
import {
  helloThroughProxy,
  MessageFramer,
  OP_MSG,
  commandOf,
  flagBits,
  MORE_TO_COME,
  type WireMessage,
} from '@idempotent-orders/nest-idempotency/embedded-store';

/** The driver's monitoring and session bookkeeping: not store work a request asked for. */
const NOT_COUNTED = new Set(['hello', 'isMaster', 'ismaster', 'ping', 'buildInfo', 'endSessions', 'saslStart', 'saslContinue']);
const HELLO = new Set(['hello', 'isMaster', 'ismaster']);

export interface CommandCounts {
  /** Store commands sent (commits and aborts included; hello, ping and endSessions left out). */
  commands: number;
  /** commitTransaction commands: transactions that reached their commit. */
  commits: number;
  /** abortTransaction commands: transactions given up (a retry, or a failure). */
  aborts: number;
  byName: Record<string, number>;
}

/**
 * A pass-through TCP proxy between one service process and the store that
 * counts the commands it sends, so the benchmark can print "store commands
 * and transactions per create" on any backend, without touching the
 * service (command monitoring inside it would cost the very CPU being
 * measured). Bytes go through unchanged, except hello replies, whose host
 * fields are rewritten to this proxy so the driver's discovery keeps using it.
 * Reading a command's name costs a few bytes, not a BSON parse.
 */
export class CommandCounter {
  private counts: CommandCounts = { commands: 0, commits: 0, aborts: 0, byName: {} };
  private readonly sockets = new Set<net.Socket>();
  private readonly background = new BackgroundWork();

  private constructor(
    private readonly server: net.Server,
    private readonly upstream: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.serve(client));
  }

  /** Starts in front of the first host of `upstreamUri`; `uri` is the same URI pointing here. */
  static async start(upstreamUri: string): Promise<CommandCounter> {
    const match = /^mongodb:\/\/(?:[^@/]*@)?([^:/,?]+):(\d+)(?=[/?]|$)/.exec(upstreamUri);
    if (!match) throw new Error('the command counter needs a single-host mongodb:// URI');
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const counter = new CommandCounter(server, { host: match[1], port: Number(match[2]) });
    counter.uriValue = upstreamUri.replace(`${match[1]}:${match[2]}`, counter.address);
    return counter;
  }

  private uriValue = '';

  get uri(): string {
    return this.uriValue;
  }

  private get address(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Counts so far; `since` subtracts an earlier snapshot. */
  snapshot(): CommandCounts {
    return { ...this.counts, byName: { ...this.counts.byName } };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private count(name: string, target: string | undefined): void {
    if (NOT_COUNTED.has(name)) return;
    this.counts.commands++;
    if (name === 'commitTransaction') this.counts.commits++;
    if (name === 'abortTransaction') this.counts.aborts++;
    const key = target === undefined ? name : `${name} ${target}`;
    this.counts.byName[key] = (this.counts.byName[key] ?? 0) + 1;
  }

  private serve(client: net.Socket): void {
    const upstream = net.connect(this.upstream.port, this.upstream.host);
    const requests = new MessageFramer();
    const replies = new MessageFramer();
    const helloRequests = new Set<number>();
    this.sockets.add(client).add(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
    client.on('data', (chunk: Buffer) => {
      for (const message of requests.push(chunk)) {
        const name = commandName(message);
        if (name !== undefined) {
          this.count(name, this.background.target(name, message));
          if (HELLO.has(name)) helloRequests.add(message.requestId);
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      for (const reply of replies.push(chunk)) {
        if (!helloRequests.delete(reply.responseTo)) {
          client.write(reply.bytes);
          continue;
        }
        // A streamed hello answers again under this reply's id.
        if (flagBits(reply) & MORE_TO_COME) helloRequests.add(reply.requestId);
        client.write(this.rewriteHello(reply));
      }
    });
  }

  private rewriteHello(reply: WireMessage): Buffer {
    return helloThroughProxy(reply, `${this.upstream.host}:${this.upstream.port}`, this.address);
  }
}

/** The first key of the command document; for OP_MSG read straight from the bytes (section kind 0 first, as drivers send). */
export function commandName(message: WireMessage): string | undefined {
  if (message.opCode === OP_MSG) {
    const sectionAt = 20;
    if (message.bytes[sectionAt] === 0) {
      const nameAt = sectionAt + 1 + 4 + 1; // kind, document length, element type
      const end = message.bytes.indexOf(0, nameAt);
      if (end > nameAt) return message.bytes.toString('latin1', nameAt, end);
    }
  }
  const command = commandOf(message);
  return command ? Object.keys(command)[0] : undefined;
}

/**
 * The collection a command names (`find orders`, `update idempotency_records`): the value of its first
 * element when that is a string, read from the bytes like the name. Undefined for commitTransaction,
 * client-level bulkWrite and the other commands whose first value is not a string.
 */
export function commandTarget(message: WireMessage): string | undefined {
  if (message.opCode !== OP_MSG || message.bytes[20] !== 0 || message.bytes[25] !== 0x02) return undefined;
  const nameEnd = message.bytes.indexOf(0, 26);
  if (nameEnd < 0) return undefined;
  const length = message.bytes.readInt32LE(nameEnd + 1);
  if (length <= 1 || nameEnd + 5 + length > message.bytes.length) return undefined;
  return message.bytes.toString('utf8', nameEnd + 5, nameEnd + 4 + length);
}

/**
 * Collections only the service's background work touches, never a request of the bench's: the event
 * consumers' (the webhook dispatcher's inbox, endpoints and deliveries). The outbox relay's commands are told
 * apart from a request's another way: they are the only ones on outbox_events outside a transaction (a
 * request writes its event inside its change's transaction).
 */
const CONSUMER_COLLECTIONS = new Set(['idempotency_inbox', 'webhook_endpoints', 'webhook_deliveries']);

/**
 * Tells the service's background work (relay, consumers) from the requests' at the wire: its commands are
 * counted as `<name> <collection> (background)`, and so is the commit or abort of a transaction one of them
 * ran in (matched by session id), which the per-request counts leave out.
 */
export class BackgroundWork {
  private readonly sessions = new Set<string>();

  /** The target to count the command under: its collection, or the collection marked `(background)`. */
  target(name: string, message: WireMessage): string | undefined {
    const target = commandTarget(message);
    const inTransaction = message.bytes.includes(IN_TRANSACTION);
    if (target !== undefined && (CONSUMER_COLLECTIONS.has(target) || (target === 'outbox_events' && !inTransaction))) {
      const session = inTransaction ? sessionIdOf(message) : undefined;
      if (session) this.sessions.add(session);
      return `${target} (background)`;
    }
    if (name === 'commitTransaction' || name === 'abortTransaction') {
      const session = sessionIdOf(message);
      if (session && this.sessions.delete(session)) return '(background)';
    }
    return target;
  }
}

/**
 * The field every command inside a transaction carries (`autocommit: false`), as a BSON element's type byte and
 * name; `txnNumber` alone would not do, retryable writes outside a transaction carry it too.
 */
const IN_TRANSACTION = Buffer.from('\x08autocommit\0', 'latin1');
const LSID = Buffer.from('\x03lsid\0', 'latin1');
const BINARY_ID = Buffer.from('\x05id\0', 'latin1');

/** The session id (`lsid.id`, a 16-byte UUID) a command carries, as hex; undefined without one. */
export function sessionIdOf(message: WireMessage): string | undefined {
  const lsid = message.bytes.indexOf(LSID);
  if (lsid < 0) return undefined;
  const id = message.bytes.indexOf(BINARY_ID, lsid + LSID.length);
  if (id < 0) return undefined;
  const at = id + BINARY_ID.length;
  const length = message.bytes.readInt32LE(at);
  return message.bytes.toString('hex', at + 5, at + 5 + length);
}

/** after - before, per request (null without requests). */
export function perRequest(
  before: CommandCounts,
  after: CommandCounts,
  requests: number,
): { commands: number; transactions: number; aborts: number; byName: Record<string, number> } | null {
  if (requests <= 0) return null;
  const byName: Record<string, number> = {};
  for (const [name, count] of Object.entries(after.byName)) {
    const sent = count - (before.byName[name] ?? 0);
    if (sent > 0) byName[name] = sent / requests;
  }
  return {
    commands: (after.commands - before.commands) / requests,
    transactions: (after.commits - before.commits) / requests,
    aborts: (after.aborts - before.aborts) / requests,
    byName,
  };
}
