import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../config/outgoing-webhooks.config.js';
import type { ResolvedAddress, Resolver } from './address-rules.js';
import { EndpointUrlPolicy } from './endpoint-url.policy.js';
import { WebhookSender } from './webhook-sender.js';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;

function settings(allowPrivate: boolean): OutgoingWebhooksConfig {
  return {
    allowPrivate,
    requireHttps: false,
    retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
    timeoutMs: 2000,
    maxResponseBytes: 64 * 1024,
    disableAfterMs: 1000,
    pollIntervalMs: 100,
    perEndpointConcurrency: 1,
    maxConcurrency: 1,
    maxEndpointsPerTenant: 16,
    retentionMs: 30 * 24 * 3600 * 1000,
  };
}

/** A stub resolver: answers from the table, records every name asked. Nothing reaches a real DNS. */
function stubResolver(table: Record<string, string[]>): Resolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = (hostname: string): Promise<ResolvedAddress[]> => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses) return Promise.reject(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
    return Promise.resolve(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
  return Object.assign(resolve, { asked });
}

/**
 * The address rules applied where the socket connects. Only a loopback
 * receiver ever exists: a refused address is proved by the stub resolver
 * being asked and the receiver never seeing a connection.
 */
describe('WebhookSender: the resolved address is checked at connect time', () => {
  let server: Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const message = (url: string) => ({ url, id: 'evt_1', payload: '{"id":"evt_1"}', secrets: [SECRET] });

  it('refuses a name that resolves to a refused address, with no connection made', async () => {
    for (const address of ['127.0.0.1', '169.254.169.254', '10.0.0.5', '::1']) {
      const resolver = stubResolver({ 'merchant.test': [address] });
      const before = connections;
      const outcome = await new WebhookSender(settings(false), resolver).send(message(`http://merchant.test:${port}/hook`), new Date());
      expect(outcome).toMatchObject({ httpStatus: null, error: 'address_refused' });
      expect(resolver.asked).toEqual(['merchant.test']);
      expect(connections).toBe(before);
    }
  });

  it('refuses a name with one refused address among public ones (rebinding), and an IP literal without a look-up', async () => {
    const resolver = stubResolver({ 'mixed.test': ['93.184.216.34', '127.0.0.1'] });
    const before = connections;
    const sender = new WebhookSender(settings(false), resolver);
    await expect(sender.send(message(`http://mixed.test:${port}/hook`), new Date())).resolves.toMatchObject({ error: 'address_refused' });
    await expect(sender.send(message(`http://127.0.0.1:${port}/hook`), new Date())).resolves.toMatchObject({ error: 'address_refused' });
    await expect(sender.send(message(`http://[::ffff:127.0.0.1]:${port}/hook`), new Date())).resolves.toMatchObject({
      error: 'address_refused',
    });
    expect(resolver.asked).toEqual(['mixed.test']);
    expect(connections).toBe(before);
  });

  it('with private addresses allowed, connects to what the resolver gave and signs the request', async () => {
    const resolver = stubResolver({ 'merchant.test': ['127.0.0.1'] });
    const outcome = await new WebhookSender(settings(true), resolver).send(message(`http://merchant.test:${port}/hook`), new Date());
    expect(outcome).toMatchObject({ httpStatus: 204, error: null });
    expect(resolver.asked).toEqual(['merchant.test']);
  });

  it('signs with every active secret, each verifiable alone', () => {
    const other = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
    const now = new Date();
    const headers = WebhookSender.headers({ ...message('http://x'), secrets: [SECRET, other] }, now);
    expect(headers['webhook-id']).toBe('evt_1');
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(now.getTime() / 1000)));
    expect(headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    for (const secret of [SECRET, other]) expect(new Webhook(secret).verify('{"id":"evt_1"}', headers)).toEqual({ id: 'evt_1' });
  });
});

describe('WebhookSender: what a receiver can cost us', () => {
  const GIGABYTE = 1024 ** 3;
  let server: Server;
  let url = '';
  /** What the receiver managed to write before we dropped the connection. */
  let sent = 0;
  let closedAfter: Promise<number>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/hang') return; // never answers
      // A 200, then up to 1 GB of body, written as fast as we read it.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => {
        while (sent < GIGABYTE && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      closedAfter = new Promise((resolve) => res.on('close', () => resolve(sent)));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const message = (path: string) => ({ url: `${url}${path}`, id: 'evt_1', payload: '{"id":"evt_1"}', secrets: [SECRET] });

  it('reads at most maxResponseBytes of an answer and drops the connection: a receiver sending 1 GB gets a few MB out before it is cut', async () => {
    const sender = new WebhookSender({ ...settings(true), timeoutMs: 60_000 }, stubResolver({}));
    const outcome = await sender.send(message('/gigabyte'), new Date());
    expect(outcome).toMatchObject({ httpStatus: 200, error: null });
    // The receiver wrote what the sockets' buffers took before our close reached it, not the gigabyte.
    expect(await closedAfter).toBeLessThan(32 * 1024 ** 2);
  });

  it('cuts an attempt whose receiver never answers at its deadline: a timeout, no status', async () => {
    const sender = new WebhookSender({ ...settings(true), timeoutMs: 300 }, stubResolver({}));
    const outcome = await sender.send(message('/hang'), new Date());
    expect(outcome).toMatchObject({ httpStatus: null, error: 'timeout' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
  });
});

describe('EndpointUrlPolicy: registration refuses what deliveries would refuse', () => {
  const policy = (allowPrivate: boolean, table: Record<string, string[]>, requireHttps = false) =>
    new EndpointUrlPolicy({ ...settings(allowPrivate), requireHttps }, stubResolver(table));

  it('refuses names resolving to private, loopback, link-local or multicast addresses, and such literals', async () => {
    const p = policy(false, { 'internal.test': ['10.0.0.1'], 'meta.test': ['169.254.169.254'], 'public.test': ['93.184.216.34'] });
    await expect(p.check('https://internal.test/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(p.check('https://meta.test/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(p.check('https://[fe80::1]/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(p.check('https://224.0.0.1/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(p.check('https://nowhere.test/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(p.check('https://public.test/hook')).resolves.toBeUndefined();
  });

  it('requires https in production, refuses credentials, and lets private addresses through only when allowed', async () => {
    await expect(policy(false, { 'public.test': ['93.184.216.34'] }, true).check('http://public.test/hook')).rejects.toMatchObject({
      extensions: { reason: 'the scheme must be https' },
    });
    await expect(policy(true, {}).check('https://u:p@127.0.0.1/hook')).rejects.toMatchObject({ code: 'webhook_url_refused' });
    await expect(policy(true, {}).check('http://127.0.0.1:9/hook')).resolves.toBeUndefined();
    await expect(policy(true, {}).check('not a url')).rejects.toMatchObject({ code: 'webhook_url_refused' });
  });
});
