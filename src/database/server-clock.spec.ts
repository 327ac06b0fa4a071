import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  betterSample,
  CLOCK_SOURCE_SILENCE_MS,
  ClockSource,
  MAX_SAMPLE_ROUND_TRIP_MS,
  sampleOf,
  ServerClock,
  serverTimeAt,
} from './server-clock.js';

describe('server clock arithmetic', () => {
  const server = new Date('2026-06-01T12:00:00.000Z');

  it('pins the server reading to the middle of the round trip', () => {
    expect(sampleOf(server, 1_000, 1_040)).toEqual({ serverMs: server.getTime(), monotonicMs: 1_020, roundTripMs: 40 });
  });

  it("advances by the monotonic clock only: whatever this host's wall clock says, now is server time", () => {
    const sample = sampleOf(server, 1_000, 1_040);
    // 30 s later on the monotonic clock; the host clock may be minutes off or have jumped meanwhile.
    expect(new Date(serverTimeAt(sample, 31_020)).toISOString()).toBe('2026-06-01T12:00:30.000Z');
  });

  it('keeps the previous reading when a new one took too long to be trusted', () => {
    const good = sampleOf(server, 0, 10);
    const slow = sampleOf(new Date(server.getTime() + 5_000), 20_000, 20_000 + MAX_SAMPLE_ROUND_TRIP_MS + 1);
    expect(betterSample(good, slow)).toBe(good);
    expect(betterSample(null, slow)).toBe(slow);
    const fresh = sampleOf(new Date(server.getTime() + 5_000), 5_000, 5_020);
    expect(betterSample(good, fresh)).toBe(fresh);
  });
});

describe('ServerClock', () => {
  const boot = new Date('2026-06-01T12:00:00.000Z');

  async function clockOn(hello: Record<string, unknown>) {
    const client = new EventEmitter();
    const connection = { db: { admin: () => ({ command: async () => hello }) }, getClient: () => client };
    const clock = new ServerClock(connection as never, new MetricsService());
    await clock.onApplicationBootstrap();
    return { clock, client };
  }

  it('reads the primary at boot, then follows the heartbeats of the primary only', async () => {
    const { clock, client } = await clockOn({ isWritablePrimary: true, localTime: boot });
    expect(Math.abs(clock.now().getTime() - boot.getTime())).toBeLessThan(1_000);

    const later = new Date(boot.getTime() + 3_600_000);
    client.emit('serverHeartbeatSucceeded', {
      awaited: false,
      duration: 4,
      reply: { isWritablePrimary: false, secondary: true, localTime: later },
    });
    expect(Math.abs(clock.now().getTime() - boot.getTime())).toBeLessThan(1_000);
    client.emit('serverHeartbeatSucceeded', { awaited: true, duration: 9_000, reply: { isWritablePrimary: true, localTime: later } });
    expect(Math.abs(clock.now().getTime() - boot.getTime())).toBeLessThan(1_000);
    client.emit('serverHeartbeatSucceeded', { awaited: false, duration: 4, reply: { isWritablePrimary: true, localTime: later } });
    expect(Math.abs(clock.now().getTime() - later.getTime())).toBeLessThan(1_000);
    clock.onApplicationShutdown();
    expect(client.listenerCount('serverHeartbeatSucceeded')).toBe(0);
  });

  it("falls back to this host's clock when the server reports none", async () => {
    const { clock } = await clockOn({ isWritablePrimary: true });
    expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThan(1_000);
    clock.onApplicationShutdown();
  });
});

describe('ClockSource (protocol review 3, M4)', () => {
  const router = { msg: 'isdbgrid', isWritablePrimary: true };

  it('follows the primary of a replica set, whatever its address', () => {
    const source = new ClockSource();
    expect(source.accepts('db2:27017', { isWritablePrimary: true, setName: 'rs0' }, 0)).toBe(true);
    expect(source.accepts('db3:27017', { secondary: true, setName: 'rs0' }, 1)).toBe(false);
    expect(source.accepts('db3:27017', { isWritablePrimary: true, setName: 'rs0' }, 2)).toBe(true);
  });

  it('behind mongos follows one router, the lowest address, and moves on only when it falls silent', () => {
    const source = new ClockSource();
    expect(source.accepts('mongos-b:27017', router, 0)).toBe(true);
    expect(source.accepts('mongos-a:27017', router, 10)).toBe(true);
    // From now on only mongos-a: mongos-b's clock (say 90 s ahead) never moves "now" back and forth.
    for (let t = 20; t < 1000; t += 10) {
      expect(source.accepts('mongos-b:27017', router, t)).toBe(false);
      expect(source.accepts('mongos-a:27017', router, t + 5)).toBe(true);
    }
    expect(source.accepts('mongos-b:27017', router, 1005 + CLOCK_SOURCE_SILENCE_MS + 1)).toBe(true);
    expect(source.accepts('mongos-a:27017', router, 1005 + CLOCK_SOURCE_SILENCE_MS + 2)).toBe(true);
  });
});
