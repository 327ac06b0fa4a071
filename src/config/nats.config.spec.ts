import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

describe('nats settings', () => {
  it('leaves events in-process unless NATS_URL is set', () => {
    expect(loadConfiguration({}).nats).toEqual({
      tls: false,
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

  it('names the variable of a bad value', () => {
    expect(problemsOf({ NATS_URL: 'http://nats:4222' })).toEqual([expect.stringMatching(/^NATS_URL: /)]);
    expect(problemsOf({ NATS_STREAM: 'has space' })).toEqual([expect.stringMatching(/^NATS_STREAM: /)]);
    expect(problemsOf({ NATS_STREAM_REPLICAS: '0' })).toEqual([expect.stringMatching(/^NATS_STREAM_REPLICAS: /)]);
  });
});
