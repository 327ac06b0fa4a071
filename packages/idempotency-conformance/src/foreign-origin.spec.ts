import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ForeignOriginError, KitHttp } from './http.js';
import { ROW_IDS, type RowId } from './rows.js';
import { runConformance } from './run.js';

// SEC4-02: a deployment (or a proxy in front of it) whose Location names another
// origin must never receive the kit's token there. The stand-in answers every
// keyed POST 201 with a Location on a second server; that server counts what it gets.
describe('the kit sends its token to the base URL origin only (SEC4-02)', () => {
  const foreignSeen: string[] = [];
  const foreign = http.createServer((request, response) => {
    foreignSeen.push(`${request.method} ${request.url} ${request.headers.authorization ?? '-'}`);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const stored = new Map<string, string>();
  let foreignOrigin = '';
  const target = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      const key = String(request.headers['idempotency-key'] ?? '');
      const headers = { 'content-type': 'application/json', location: `${foreignOrigin}/v1/orders/ord_1` };
      if (stored.has(key)) return response.writeHead(201, { ...headers, 'idempotent-replayed': 'true' }).end(stored.get(key));
      stored.set(key, JSON.stringify({ id: 'ord_1', body: raw.length }));
      response.writeHead(201, headers).end(stored.get(key));
    });
  });
  const listen = async (server: http.Server) => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  let baseUrl = '';

  beforeAll(async () => {
    foreignOrigin = await listen(foreign);
    baseUrl = await listen(target);
  });
  afterAll(async () => {
    for (const server of [foreign, target]) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('get-resource is SKIP naming the foreign origin, and the foreign origin receives nothing', async () => {
    const run: RowId[] = ['first-use', 'get-resource'];
    const skip = Object.fromEntries(ROW_IDS.filter((id) => !run.includes(id)).map((id) => [id, 'not this spec'])) as Partial<
      Record<RowId, string>
    >;
    const report = await runConformance({ baseUrl, token: 'TOPSECRET-TOKEN-123', skip, keyStatusPath: null });
    expect(report.rows.find((row) => row.id === 'get-resource')).toMatchObject({
      status: 'SKIP',
      reason: expect.stringContaining(`the Location names ${foreignOrigin}, not the base URL's origin`) as unknown as string,
    });
    expect(foreignSeen).toEqual([]);
  });

  it('KitHttp.get refuses another port, host or scheme before sending anything', () => {
    const kit = new KitHttp('https://api.example.com/base', 1000, 10);
    for (const url of [
      'http://api.example.com/v1/orders/1',
      'https://api.example.com:8443/v1/orders/1',
      'https://evil.example.com/v1/orders/1',
    ]) {
      expect(() => kit.get(new URL(url), { authorization: 'Bearer t' })).toThrow(ForeignOriginError);
    }
    expect(kit.requestCount).toBe(0);
    expect(kit.sameOrigin(kit.resolve('/v1/orders/1'))).toBe(true);
  });
});
