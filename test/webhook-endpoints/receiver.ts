import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver does with its n-th request (from 1): answer a status, hang, or stream without end. */
export type Behaviour = (n: number, res: ServerResponse) => void;

export const answer =
  (status: number, headers: Record<string, string> = {}): Behaviour =>
  (_, res) => {
    res.writeHead(status, headers).end('ok');
  };

/**
 * A merchant's endpoint on loopback (the only address a test ever reaches):
 * records every request and answers as `behaviour` says.
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Bytes written by streaming answers before the client went away. */
  streamedBytes = 0;
  behaviour: Behaviour = answer(200);
  private server: Server | null = null;
  private readonly hanging = new Set<ServerResponse>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        this.behaviour(this.received.length, res);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/hook`;
  }

  /** Never answers (until the client gives up or the receiver stops). */
  readonly hang: Behaviour = (_, res) => {
    this.hanging.add(res);
  };

  /** 200 and then a body without end (a receiver sending 1 GB): counts what it wrote until the client closed. */
  readonly flood: Behaviour = (_, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(16 * 1024, 120);
    const pump = () => {
      while (!res.destroyed && this.streamedBytes < 1024 ** 3) {
        this.streamedBytes += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    res.on('close', () => undefined);
    pump();
  };

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs` with `what`. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
