import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAnswer, KitHttp } from './http.js';
import { startLossyProxy } from './lossy-proxy.js';

// A stand-in deployment: counts the requests it finished, answers with what it received.
describe('the lossy proxy', () => {
  let server: http.Server;
  let baseUrl: string;
  const handled: Array<{ host?: string; body: string }> = [];

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        handled.push({ host: request.headers.host, body });
        response.writeHead(201, { 'content-type': 'application/json', location: '/v1/things/1' });
        response.end(JSON.stringify({ n: handled.length, body }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('lets the first request through, drops its answer with a reset, then passes the next one whole', async () => {
    const proxy = await startLossyProxy(new URL(baseUrl), 1, 5_000);
    const client = new KitHttp(baseUrl, 5_000, 10);
    try {
      const first = await client.send({ method: 'POST', path: '/v1/things', body: '{"a":1}', via: proxy.origin });
      const second = await client.send({ method: 'POST', path: '/v1/things', body: '{"a":1}', via: proxy.origin });

      expect(isAnswer(first)).toBe(false);
      expect(first).toEqual({ error: expect.stringMatching(/ECONNRESET|socket hang up/) });
      expect(handled).toEqual([
        { host: new URL(baseUrl).host, body: '{"a":1}' },
        { host: new URL(baseUrl).host, body: '{"a":1}' },
      ]);
      expect(proxy.lost()).toEqual([{ status: 201, headers: expect.objectContaining({ location: '/v1/things/1' }) }]);
      expect(isAnswer(second) && second.status).toBe(201);
      expect(isAnswer(second) && JSON.parse(second.body.toString())).toEqual({ n: 2, body: '{"a":1}' });
    } finally {
      await proxy.close();
    }
  });

  it("keeps the base URL's path prefix and stops at the request budget", async () => {
    const client = new KitHttp(baseUrl, 5_000, 1);
    expect(client.fullPath('/v1/things')).toBe('/api/v1/things');
    expect(isAnswer(await client.send({ method: 'GET', path: '/v1/things' }))).toBe(true);
    expect(() => client.send({ method: 'GET', path: '/v1/things' })).toThrow('request budget of 1 exhausted');
  });
});
