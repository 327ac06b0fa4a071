// How the service reaches a broker that asks for more than a plain connection: TLS with a private CA, mutual
// TLS, a user and password or a token in NATS_URL. A real nats-server each, on loopback; certificates from a
// throwaway CA (openssl). Connected means an event went through JetStream and was acknowledged; refused means
// the service started degraded, creates went on, the event waits in the outbox, and the log says why.
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { JetStreamBroker } from '../../src/outbox/jetstream.broker.js';
import { OutboxRelay } from '../../src/outbox/outbox.relay.js';
import { findNatsServer, startNatsServer, type NatsServer, type NatsServerOptions } from '../../bench/nats-server.js';
import { findOpenssl, makeTestCertificates, type TestCertificates } from '../support/tls-certs.js';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

const nats = findNatsServer();
const openssl = findOpenssl();
const missing = 'missing' in nats ? nats.missing : 'missing' in openssl ? openssl.missing : null;
if (missing) console.warn(`SKIPPED test/events/nats-connection: ${missing}`);
const describeNats = missing ? describe.skip : describe;

const metric = (text: string, series: string) => Number(new RegExp(`^${series} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN);

describeNats('the connection to a broker with TLS or credentials (real nats-server)', () => {
  let certs: TestCertificates;
  let server: NatsServer | null = null;
  let t: TestApp | null = null;
  let seq = 0;
  let warnings: string[] = [];

  beforeAll(() => {
    certs = makeTestCertificates();
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });
  afterEach(async () => {
    await t?.close();
    await server?.stop();
    [t, server, warnings] = [null, null, []];
  });
  afterAll(() => {
    jest.restoreAllMocks();
    certs?.remove();
  });

  const broker = (options: NatsServerOptions) => startNatsServer((nats as { binary: string }).binary, options);
  /** TLS required; the certificate names localhost (a client checks the name it dialled, as it would a real host's). */
  const tlsServer = async (verifyClients = false) => {
    const started = await broker({
      scheme: 'tls',
      args: [
        '--tls',
        '--tlscert',
        certs.serverCert,
        '--tlskey',
        certs.serverKey,
        ...(verifyClients ? ['--tlsverify', '--tlscacert', certs.caFile] : []),
      ],
    });
    return { started, url: started.url.replace('127.0.0.1', 'localhost') };
  };

  /** The service on `url` with `env`; then one create, and what the relay made of its event. */
  async function serviceOn(url: string, env: Record<string, string> = {}) {
    await t?.close();
    t = null;
    warnings = [];
    t = await startApp({
      dbName: `test_nats_connection_${++seq}`,
      env: { NATS_URL: url, NATS_CONNECT_WAIT_MS: '2000', OUTBOX_PUBLISH_TIMEOUT_MS: '1000', ...env },
    });
    const created = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', `nats-${seq}`).send(orderBody());
    expect(created.status).toBe(201);
    const published = await t.app.get(OutboxRelay).tick();
    const metrics = (await t.http().get('/metrics')).text;
    return {
      published,
      state: t.app.get(JetStreamBroker).state,
      connected: metric(metrics, 'events_broker_connected'),
      pending: await t.db.collection('outbox_events').countDocuments({ status: 'pending' }),
    };
  }
  const CONNECTED = { published: 1, state: 'connected', connected: 1, pending: 0 };
  const REFUSED = { published: 0, state: 'connecting', connected: 0, pending: 1 };
  const refusedFor = (why: RegExp) =>
    expect(warnings.filter((line) => /did not take the connection/.test(line))).toEqual([expect.stringMatching(why)]);

  it('TLS: a server certificate from a private CA is trusted through NATS_TLS_CA_FILE; under another CA it is refused, and the log says why', async () => {
    const { started, url } = await tlsServer();
    server = started;
    expect(url).toMatch(/^tls:\/\/localhost:/);
    expect(await serviceOn(url, { NATS_TLS_CA_FILE: certs.caFile })).toEqual(CONNECTED);
    expect(await serviceOn(url, { NATS_TLS_CA_FILE: certs.otherCaFile })).toEqual(REFUSED);
    refusedFor(/certificate/i);
  });

  it('mutual TLS: with NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE the server lets the service in; without them it does not', async () => {
    const { started, url } = await tlsServer(true);
    server = started;
    const client = { NATS_TLS_CA_FILE: certs.caFile, NATS_TLS_CERT_FILE: certs.clientCert, NATS_TLS_KEY_FILE: certs.clientKey };
    expect(await serviceOn(url, client)).toEqual(CONNECTED);
    expect(await serviceOn(url, { NATS_TLS_CA_FILE: certs.caFile })).toEqual(REFUSED);
    // What the client learns depends on timing: the server's "bad certificate" alert, or its reset of the socket.
    refusedFor(/certificate|ECONNRESET/i);
  });

  it('a user and password in NATS_URL (percent-encoded), and a token; a wrong password is refused, and the log says so', async () => {
    server = await broker({ args: ['--user', 'orders', '--pass', 's@cret'] });
    const at = server.url.replace('nats://', '');
    expect(await serviceOn(`nats://orders:s%40cret@${at}`)).toEqual(CONNECTED);
    expect(await serviceOn(`nats://orders:wrong@${at}`)).toEqual(REFUSED);
    refusedFor(/authorization violation/i);
    // No password in the log line: the server is named by host and port only.
    expect(warnings.join('\n')).not.toMatch(/wrong|s@cret/);
    await t!.close();
    t = null;
    await server.stop();
    server = await broker({ args: ['--auth', 't0ken'] });
    expect(await serviceOn(`nats://t0ken@${server.url.replace('nats://', '')}`)).toEqual(CONNECTED);
  });
});
