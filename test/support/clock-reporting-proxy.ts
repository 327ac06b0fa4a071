// A TCP proxy in front of a MongoDB server that reports no clock (the test
// emulator): its hello replies gain `localTime` - this test process's clock -
// as mongod's always carry, so a service behind it reads "the server's clock"
// the way it would from a real primary. It also names itself in `me`,
// `primary` and `hosts` (or the driver would connect past it). Every other
// byte is forwarded unchanged. As `mongos`, it answers hello as a router of a
// sharded cluster does (msg: 'isdbgrid', no replica-set fields), with its own
// clock offset: several of them in front of one server stand for the routers
// of a cluster whose hosts' clocks disagree.
import net from 'node:net';
import { MessageFramer, replyOf, withReplyDocument, type WireMessage } from '@idempotent-orders/nest-idempotency/embedded-store';

export interface ClockReportingProxy {
  /** `upstreamUri` pointed at the proxy. */
  readonly uri: string;
  close(): Promise<void>;
}

export interface ClockProxyOptions {
  /** Answer hello as mongos does. */
  mongos?: boolean;
  /** This proxy's clock, relative to the test process's. */
  offsetMs?: number;
}

const REPLICA_SET_FIELDS = [
  'setName',
  'setVersion',
  'hosts',
  'passives',
  'arbiters',
  'primary',
  'me',
  'secondary',
  'electionId',
  'topologyVersion',
];

export async function startClockReportingProxy(upstreamUri: string, options: ClockProxyOptions = {}): Promise<ClockReportingProxy> {
  const [, upstreamHost, upstreamPort] = /^mongodb:\/\/([^:/,]+):(\d+)[/?]/.exec(upstreamUri) ?? [];
  if (!upstreamHost) throw new Error(`clock-reporting proxy needs a single-host URI (got ${upstreamUri})`);
  const upstream = `${upstreamHost}:${upstreamPort}`;
  const sockets = new Set<net.Socket>();
  let address = '';

  const rewrite = (message: WireMessage): Buffer => {
    const document = replyOf(message);
    if (!document || !('maxWireVersion' in document) || !('ismaster' in document || 'isWritablePrimary' in document)) return message.bytes;
    if (options.mongos) {
      for (const field of REPLICA_SET_FIELDS) delete document[field];
      document.msg = 'isdbgrid';
      document.localTime = new Date(Date.now() + (options.offsetMs ?? 0));
      return withReplyDocument(message, document);
    }
    document.localTime ??= new Date(Date.now() + (options.offsetMs ?? 0));
    const here = (host: unknown) => (host === upstream ? address : host);
    for (const field of ['me', 'primary']) if (field in document) document[field] = here(document[field]);
    if (Array.isArray(document.hosts)) document.hosts = (document.hosts as unknown[]).map(here);
    return withReplyDocument(message, document);
  };

  const server = net.createServer((client) => {
    const toServer = net.connect(Number(upstreamPort), upstreamHost);
    const framer = new MessageFramer();
    for (const socket of [client, toServer]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => toServer.destroy());
    toServer.on('close', () => client.destroy());
    client.pipe(toServer);
    toServer.on('data', (chunk: Buffer) => {
      for (const message of framer.push(chunk)) client.write(rewrite(message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;

  const uri = upstreamUri.replace(/^mongodb:\/\/[^/?]+/, `mongodb://${address}`);
  return {
    uri: options.mongos ? uri.replace(/([?&])replicaSet=[^&]*&?/, '$1').replace(/[?&]$/, '') : uri,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
