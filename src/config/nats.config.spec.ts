import { describe, expect, it } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

describe('nats settings', () => {
  it('leaves events in-process unless NATS_URL is set', () => {
    expect(loadConfiguration({}).nats).toEqual({
      servers: [],
      tls: false,
      tlsFiles: {},
      credsFile: undefined,
      stream: 'ORDER_EVENTS',
      replicas: 1,
      connectWaitMs: 5000,
    });
  });

  it('reads the server, TLS and the credentials from the URL', () => {
    const plain = loadConfiguration({ NATS_URL: 'nats://nats:4222' }).nats;
    expect(plain).toMatchObject({ server: 'nats:4222', tls: false });
    expect([plain.user, plain.pass, plain.token]).toEqual([undefined, undefined, undefined]);
    expect(loadConfiguration({ NATS_URL: 'tls://broker.internal' }).nats).toMatchObject({ server: 'broker.internal:4222', tls: true });
    expect(loadConfiguration({ NATS_URL: 'nats://orders:s%40cret@nats:4222' }).nats).toMatchObject({
      user: 'orders',
      pass: 's@cret',
    });
    expect(loadConfiguration({ NATS_URL: 'nats://t0ken@nats:4222' }).nats).toMatchObject({ token: 't0ken' });
  });

  it("takes a cluster's seeds, comma-separated, with one scheme and one identity for all", () => {
    expect(loadConfiguration({ NATS_URL: 'nats://orders:pw@n1:4222,nats://orders:pw@n2:4223,nats://orders:pw@n3' }).nats).toMatchObject({
      servers: ['n1:4222', 'n2:4223', 'n3:4222'],
      server: 'n1:4222,n2:4223,n3:4222',
      user: 'orders',
      pass: 'pw',
    });
    expect(problemsOf({ NATS_URL: 'tls://n1:4222,nats://n2:4222' })).toEqual([
      'NATS_URL: every seed needs the same scheme and credentials',
    ]);
    expect(problemsOf({ NATS_URL: 'nats://a:x@n1,nats://b:y@n2' })).toEqual(['NATS_URL: every seed needs the same scheme and credentials']);
    expect(problemsOf({ NATS_URL: 'nats://n1:4222,' })).toEqual([expect.stringMatching(/^NATS_URL: /)]);
    expect(problemsOf({ NATS_URL: 'nats://n1:4222, nats://n2:4222' })).toEqual([expect.stringMatching(/^NATS_URL: /)]);
  });

  it('takes PEM files for TLS, refusing a file it cannot read, half a client pair, or TLS files on a nats:// URL', () => {
    const pem = fileURLToPath(import.meta.url); // any readable file: the settings only check that it can be read
    const tls = { NATS_URL: 'tls://broker.internal:4222', NATS_TLS_CA_FILE: pem, NATS_TLS_CERT_FILE: pem, NATS_TLS_KEY_FILE: pem };
    expect(loadConfiguration(tls).nats).toMatchObject({ tls: true, tlsFiles: { caFile: pem, certFile: pem, keyFile: pem } });
    expect(problemsOf({ ...tls, NATS_TLS_CA_FILE: '/nonexistent/ca.pem' })).toEqual(['NATS_TLS_CA_FILE: cannot read /nonexistent/ca.pem']);
    expect(problemsOf({ NATS_URL: 'nats://n:4222', NATS_CREDS_FILE: '/nonexistent/orders.creds' })).toEqual([
      'NATS_CREDS_FILE: cannot read /nonexistent/orders.creds',
    ]);
    expect(problemsOf({ ...tls, NATS_TLS_KEY_FILE: undefined })).toEqual([expect.stringMatching(/set both \(mutual TLS\) or neither/)]);
    expect(problemsOf({ NATS_URL: 'nats://n:4222', NATS_TLS_CA_FILE: pem })).toEqual(['NATS_TLS_*: need a tls:// NATS_URL']);
  });

  it('names the variable of a bad value', () => {
    expect(problemsOf({ NATS_URL: 'http://nats:4222' })).toEqual([expect.stringMatching(/^NATS_URL: /)]);
    expect(problemsOf({ NATS_STREAM: 'has space' })).toEqual([expect.stringMatching(/^NATS_STREAM: /)]);
    expect(problemsOf({ NATS_STREAM_REPLICAS: '0' })).toEqual([expect.stringMatching(/^NATS_STREAM_REPLICAS: /)]);
  });
});
