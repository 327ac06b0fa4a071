import { once } from 'node:events';
import net from 'node:net';
import { BSON } from 'mongodb';
import { commandOf, MessageFramer, opMsg, OP_QUERY, replyOf, type WireMessage } from '@idempotent-orders/nest-idempotency/embedded-store';

/**
 * A wire-protocol peer for the serializing proxy's own tests: it records every
 * command that reaches it, in order, and answers {ok: 1} (hello with its own
 * address, as the emulator does). Not a database: it lets a test see exactly
 * what the proxy let through, and when.
 */
export class FakeMongod {
  readonly received: BSON.Document[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly server: net.Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      const framer = new MessageFramer();
      socket.on('data', (chunk) => {
        for (const message of framer.push(chunk)) this.answer(socket, message);
      });
    });
  }

  static async start(): Promise<FakeMongod> {
    const server = net.createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new FakeMongod(server);
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  names(): string[] {
    return this.received.map((command) => Object.keys(command)[0]);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private answer(socket: net.Socket, message: WireMessage): void {
    const command = commandOf(message)!;
    this.received.push(command);
    const name = Object.keys(command)[0];
    const me = `127.0.0.1:${this.port}`;
    const reply =
      name === 'hello' || name === 'isMaster'
        ? { ok: 1, isWritablePrimary: true, setName: 'rs0', me, primary: me, hosts: [me], compression: ['zstd'] }
        : { ok: 1 };
    if (message.opCode === OP_QUERY) socket.write(opReply(message.requestId, reply));
    else socket.write(opMsg(1, message.requestId, reply));
  }
}

function opReply(responseTo: number, document: BSON.Document): Buffer {
  const body = Buffer.from(BSON.serialize(document));
  const header = Buffer.alloc(36);
  header.writeInt32LE(36 + body.length, 0);
  header.writeInt32LE(1, 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(1, 12); // OP_REPLY
  header.writeInt32LE(0, 16); // responseFlags
  header.writeBigInt64LE(0n, 20); // cursorID
  header.writeInt32LE(0, 28); // startingFrom
  header.writeInt32LE(1, 32); // numberReturned
  return Buffer.concat([header, body]);
}

/** One client connection speaking raw OP_MSG (or OP_QUERY for the legacy handshake). */
export class RawClient {
  private nextId = 1;
  private readonly framer = new MessageFramer();
  private readonly waiting = new Map<number, (reply: BSON.Document) => void>();

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk) => {
      for (const reply of this.framer.push(chunk)) this.waiting.get(reply.responseTo)?.(replyOf(reply, false)!);
    });
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  command(document: BSON.Document): Promise<BSON.Document> {
    const id = this.nextId++;
    const reply = new Promise<BSON.Document>((resolve) => this.waiting.set(id, resolve));
    this.socket.write(opMsg(id, 0, { ...document, $db: document.$db ?? 'test' }));
    return reply;
  }

  /** The legacy handshake: OP_QUERY on admin.$cmd, answered by OP_REPLY. */
  legacyHello(): Promise<BSON.Document> {
    const id = this.nextId++;
    const reply = new Promise<BSON.Document>((resolve) => this.waiting.set(id, resolve));
    const name = Buffer.from('admin.$cmd\0');
    const query = Buffer.from(BSON.serialize({ isMaster: 1 }));
    const header = Buffer.alloc(20);
    header.writeInt32LE(20 + name.length + 8 + query.length, 0);
    header.writeInt32LE(id, 4);
    header.writeInt32LE(0, 8);
    header.writeInt32LE(OP_QUERY, 12);
    header.writeInt32LE(0, 16); // flags
    const skipAndReturn = Buffer.alloc(8);
    skipAndReturn.writeInt32LE(-1, 4);
    this.socket.write(Buffer.concat([header, name, skipAndReturn, query]));
    return reply;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The fields that make a command part of one transaction. */
export function inTransaction(lsid: BSON.Binary, txnNumber: number, first = false): BSON.Document {
  return {
    lsid: { id: lsid },
    txnNumber: BSON.Long.fromNumber(txnNumber),
    autocommit: false,
    ...(first ? { startTransaction: true } : {}),
  };
}

export const newSessionId = (): BSON.Binary => new BSON.Binary(BSON.UUID.generate(), BSON.Binary.SUBTYPE_UUID);
