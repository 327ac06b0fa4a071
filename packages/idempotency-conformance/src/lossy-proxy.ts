// The kit's own proxy on 127.0.0.1, to lose an answer on its way back: the
// request reaches the deployment, the deployment does the work and starts to
// answer, and at that moment both connections die - the kit's with a reset.
// It speaks HTTP rather than relaying TCP bytes so that it works in front of
// an https deployment too (a byte relay cannot tell a TLS handshake from the
// answer); what it forwards is the kit's request, unchanged but for Host.
import http from 'node:http';
import https from 'node:https';
import { isIP, type AddressInfo } from 'node:net';
import { flatHeaders } from './http.js';

/** What the deployment started to answer before the proxy cut it off. */
export interface LostAnswer {
  status: number;
  headers: Record<string, string>;
}

export interface LossyProxy {
  /** http://127.0.0.1:<port>, to pass as KitRequest.via. */
  readonly origin: string;
  /** Answers dropped so far, in order. */
  lost(): LostAnswer[];
  close(): Promise<void>;
}

/** Drops the answers to the first `dropFirst` requests; later ones pass through. */
export async function startLossyProxy(target: URL, dropFirst: number, timeoutMs: number): Promise<LossyProxy> {
  const lost: LostAnswer[] = [];
  let seen = 0;
  const server = http.createServer((request, response) => {
    const drop = seen++ < dropFirst;
    const upstream = forward(target, request, timeoutMs, (answer) => {
      if (drop) {
        lost.push({ status: answer.statusCode ?? 0, headers: flatHeaders(answer.headers) });
        answer.destroy();
        upstream.destroy();
        request.socket.resetAndDestroy();
        return;
      }
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => request.socket.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    lost: () => [...lost],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function forward(
  target: URL,
  request: http.IncomingMessage,
  timeoutMs: number,
  onAnswer: (answer: http.IncomingMessage) => void,
): http.ClientRequest {
  const headers = { ...request.headers, host: target.host };
  delete headers.connection;
  const options: https.RequestOptions = {
    protocol: target.protocol,
    hostname: target.hostname.replace(/^\[|\]$/g, ''), // an IPv6 literal without its brackets
    port: target.port || undefined,
    // TLS checks the certificate against the deployment's name, not 127.0.0.1 (SNI takes no IP).
    servername: isIP(target.hostname) ? undefined : target.hostname,
    method: request.method,
    path: request.url,
    headers,
    agent: false,
  };
  const upstream = target.protocol === 'https:' ? https.request(options, onAnswer) : http.request(options, onAnswer);
  upstream.setTimeout(timeoutMs, () => upstream.destroy(new Error(`no answer within ${timeoutMs} ms`)));
  return upstream;
}
