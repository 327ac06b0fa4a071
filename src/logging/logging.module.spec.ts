import { describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pinoHttp } from 'pino-http';
import { requestLogOptions } from './logging.module.js';
import { ROUTE_PATTERN } from './route-pattern.js';

const SECRET = 'Bearer acme-secret-0123456789';

/**
 * The request log's options on a real server: what a line says, read back
 * as JSON. Handlers leave on the raw request what the app's hooks and guards
 * do (route pattern, tenant, key id, operation).
 */
async function linesOf(handle: (request: IncomingMessage, response: ServerResponse) => void, send: (port: number) => Promise<void>) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const options = requestLogOptions({ logLevel: 'info', logFormat: 'json', logRefusedPerSecond: 10 }, { digestKey: Buffer.alloc(32, 7) });
  const log = pinoHttp(options, sink);
  const server = createServer((request, response) => {
    log(request, response);
    Object.assign(request, {
      [ROUTE_PATTERN]: '/v1/orders',
      tenant: 'acme',
      apiKeyId: 'acme#1',
      idempotency: { operation: 'orders.create' },
    });
    handle(request, response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    await send((server.address() as AddressInfo).port);
    for (let waited = 0; lines.length === 0 && waited < 2000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    server.closeAllConnections();
    server.close();
  }
  return lines;
}

const post = (port: number, abort = false) =>
  new Promise<void>((resolve) => {
    const request = httpRequest({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/v1/orders?customer=cus_1',
      headers: { authorization: SECRET, 'idempotency-key': 'key-0001', 'content-type': 'application/json' },
    });
    request.on('response', (response) => response.resume().on('end', resolve));
    request.on('error', () => resolve());
    request.end('{}');
    if (abort) setTimeout(() => (request.destroy(), resolve()), 50);
  });

describe('request log line', () => {
  it('a 5xx: an error line with every field the end of a request knows, the error, and no secret, key or URL', async () => {
    const lines = await linesOf(
      (_request, response) => {
        response.statusCode = 503;
        response.end('{}');
      },
      (port) => post(port),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      route: '/v1/orders',
      tenant: 'acme',
      apiKeyId: 'acme#1',
      operation: 'orders.create',
      idempotencyKeyHash: expect.stringMatching(/^[0-9a-f]{16}$/),
      req: { method: 'POST' },
      res: { statusCode: 503 },
      err: { message: 'failed with status code 503' },
    });
    const text = JSON.stringify(lines);
    for (const leaked of ['acme-secret', 'key-0001', 'cus_1', 'authorization']) expect(text).not.toContain(leaked);
  });

  it('a request its client abandoned before an answer: no status, not the default 200 of a success', async () => {
    const lines = await linesOf(
      () => undefined,
      (port) => post(port, true),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ res: { statusCode: null }, route: '/v1/orders', tenant: 'acme' });
  });
});
