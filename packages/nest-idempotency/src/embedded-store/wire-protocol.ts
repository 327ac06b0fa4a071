import { BSON } from 'mongodb';

/**
 * Just enough of the MongoDB wire protocol for a proxy that forwards bytes
 * unchanged and only needs to read a command's name and session fields, or
 * to answer a command itself. Written by hand because no kept npm package
 * parses the protocol outside a driver; the driver's own codec is internal.
 * https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
 */
export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

const HEADER_BYTES = 16;
/** OP_MSG flag bits. */
const CHECKSUM_PRESENT = 1 << 0;
export const MORE_TO_COME = 1 << 1;

/** Values kept as BSON wrappers (Long, Int32, Double) so a rewritten reply keeps its types. */
const EXACT = { promoteValues: false } as const;

export interface WireMessage {
  /** The whole message, header included, as received. */
  bytes: Buffer;
  requestId: number;
  responseTo: number;
  opCode: number;
}

/** Splits a TCP byte stream into whole messages (a message may span chunks). */
export class MessageFramer {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): WireMessage[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const messages: WireMessage[] = [];
    while (this.pending.length >= HEADER_BYTES) {
      const length = this.pending.readInt32LE(0);
      if (length < HEADER_BYTES) throw new Error(`malformed wire message: length ${length}`);
      if (this.pending.length < length) break;
      const bytes = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      messages.push({
        bytes,
        requestId: bytes.readInt32LE(4),
        responseTo: bytes.readInt32LE(8),
        opCode: bytes.readInt32LE(12),
      });
    }
    return messages;
  }
}

/** The command document of a request (OP_MSG section kind 0, or OP_QUERY's query), or undefined. */
export function commandOf(message: WireMessage): BSON.Document | undefined {
  if (message.opCode === OP_MSG) return msgBody(message.bytes);
  if (message.opCode === OP_QUERY) return queryBody(message.bytes);
  return undefined;
}

export function flagBits(message: WireMessage): number {
  return message.opCode === OP_MSG ? message.bytes.readUInt32LE(HEADER_BYTES) : 0;
}

function msgBody(bytes: Buffer, exact = true): BSON.Document | undefined {
  let offset = HEADER_BYTES + 4;
  const end = bytes.length - (bytes.readUInt32LE(HEADER_BYTES) & CHECKSUM_PRESENT ? 4 : 0);
  while (offset < end) {
    const kind = bytes[offset];
    offset += 1;
    if (kind === 0) return BSON.deserialize(bytes.subarray(offset, offset + bytes.readInt32LE(offset)), exact ? EXACT : {});
    // Kind 1 (document sequence): skip it, its size includes the size field.
    offset += bytes.readInt32LE(offset);
  }
  return undefined;
}

function queryBody(bytes: Buffer): BSON.Document {
  const nameEnd = bytes.indexOf(0, HEADER_BYTES + 4);
  const offset = nameEnd + 1 + 8; // numberToSkip, numberToReturn
  return BSON.deserialize(bytes.subarray(offset, offset + bytes.readInt32LE(offset)), EXACT);
}

/** The reply document of an OP_MSG or OP_REPLY; `exact` keeps BSON number wrappers. */
export function replyOf(message: WireMessage, exact = true): BSON.Document | undefined {
  if (message.opCode === OP_MSG) return msgBody(message.bytes, exact);
  if (message.opCode === OP_REPLY) {
    const offset = HEADER_BYTES + 20; // responseFlags, cursorID, startingFrom, numberReturned
    return BSON.deserialize(message.bytes.subarray(offset, offset + message.bytes.readInt32LE(offset)), exact ? EXACT : {});
  }
  return undefined;
}

/**
 * The same reply with another document: OP_MSG gets one kind-0 section and
 * no checksum; OP_REPLY keeps its flags and cursor fields.
 */
export function withReplyDocument(message: WireMessage, document: BSON.Document): Buffer {
  const body = Buffer.from(BSON.serialize(document));
  const prefix =
    message.opCode === OP_MSG
      ? Buffer.from([0, 0, 0, 0, 0]) // flagBits 0, section kind 0
      : message.bytes.subarray(HEADER_BYTES, HEADER_BYTES + 20);
  return frame(message.requestId, message.responseTo, message.opCode, Buffer.concat([prefix, body]));
}

/** An OP_MSG request or reply with one kind-0 section. */
export function opMsg(requestId: number, responseTo: number, document: BSON.Document): Buffer {
  return frame(requestId, responseTo, OP_MSG, Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), BSON.serialize(document)]));
}

function frame(requestId: number, responseTo: number, opCode: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeInt32LE(HEADER_BYTES + payload.length, 0);
  header.writeInt32LE(requestId, 4);
  header.writeInt32LE(responseTo, 8);
  header.writeInt32LE(opCode, 12);
  return Buffer.concat([header, payload]);
}

/**
 * A hello reply as a proxy in front of `upstream` must send it: every address
 * naming the upstream names the proxy instead (or the driver would connect
 * past it), and no compression (the proxy reads commands as they come).
 */
export function helloThroughProxy(reply: WireMessage, upstream: string, proxy: string): Buffer {
  const document = replyOf(reply);
  if (!document) return reply.bytes;
  const here = (host: unknown) => (host === upstream ? proxy : host);
  for (const field of ['me', 'primary']) if (field in document) document[field] = here(document[field]);
  for (const field of ['hosts', 'passives', 'arbiters']) {
    if (Array.isArray(document[field])) document[field] = (document[field] as unknown[]).map(here);
  }
  delete document.compression;
  return withReplyDocument(reply, document);
}
