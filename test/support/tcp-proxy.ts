// A tiny TCP proxy on 127.0.0.1 in front of the service, to lose a response
// on the way back: the request reaches the service, the service does the work
// and answers, and the client never hears it - the case idempotency keys exist for.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  readonly baseUrl: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Responses dropped so far (upstream had started answering). */
  readonly dropped: number;
  /**
   * The next accepted connection forwards its request, and the moment the
   * upstream starts answering, both sockets are destroyed: the client sees a
   * reset with no byte of the response. Resolves when that has happened.
   */
  dropNextResponse(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const host = target.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  let connections = 0;
  let dropped = 0;
  let armed: (() => void) | null = null;

  const server: Server = createServer((client) => {
    connections++;
    const onDropped = armed;
    armed = null;
    const upstream = connect({ host, port: target.port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    // A reset on one side tears down the other; errors are expected here, not reported.
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());

    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (onDropped) {
        dropped++;
        // resetAndDestroy: RST to the client, like a middlebox dying mid-answer.
        client.resetAndDestroy();
        upstream.destroy();
        onDropped();
        return;
      }
      if (!client.write(chunk)) {
        upstream.pause();
        client.once('drain', () => upstream.resume());
      }
    });
    upstream.on('end', () => client.end());
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');

  return {
    port: address.port,
    baseUrl: `http://127.0.0.1:${address.port}`,
    get connections() {
      return connections;
    },
    get dropped() {
      return dropped;
    },
    dropNextResponse: () => new Promise<void>((resolve) => (armed = resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
