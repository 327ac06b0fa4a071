import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Document, ServerHeartbeatSucceededEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import { performance } from 'node:perf_hooks';
import { Clock } from '../common/clock.js';
import { MetricsService } from '../metrics/metrics.service.js';

/** A reading whose round trip took longer says too little (error up to half of it); the previous one is kept. */
export const MAX_SAMPLE_ROUND_TRIP_MS = 1_000;

/** One reading of the server's clock, pinned to this process's monotonic clock. */
export interface ClockSample {
  serverMs: number;
  /** performance.now() at the middle of the round trip: the best guess of when the server read its clock. */
  monotonicMs: number;
  roundTripMs: number;
}

/** The server read its clock somewhere inside the round trip; its middle is off by at most half of it. */
export function sampleOf(serverTime: Date, sentAtMs: number, receivedAtMs: number): ClockSample {
  return { serverMs: serverTime.getTime(), monotonicMs: (sentAtMs + receivedAtMs) / 2, roundTripMs: receivedAtMs - sentAtMs };
}

/** Server time now: the sample advanced by the monotonic clock, which no host clock step or skew moves. */
export function serverTimeAt(sample: ClockSample, monotonicNowMs: number): number {
  return sample.serverMs + (monotonicNowMs - sample.monotonicMs);
}

/** Keep the new reading unless its round trip was too slow to trust and an older one exists. */
export function betterSample(current: ClockSample | null, next: ClockSample): ClockSample {
  return current && next.roundTripMs > MAX_SAMPLE_ROUND_TRIP_MS ? current : next;
}

const isPrimary = (hello: Document): boolean => hello.isWritablePrimary === true || hello.ismaster === true;
const isMongos = (hello: Document): boolean => hello.msg === 'isdbgrid';

/** A pinned mongos that sent no heartbeat for this long has gone: the clock follows the next one. */
export const CLOCK_SOURCE_SILENCE_MS = 60_000;

/**
 * Which server's heartbeats set the clock. On a replica set, whichever
 * member is primary (there is one). Behind mongos every router answers as
 * "primary" with its own host's clock, so following all of them would make
 * "now" jump between their clocks: the clock follows one router, the same
 * one on every instance given the same seed list (the lowest address), and
 * moves on only when that one falls silent.
 */
export class ClockSource {
  private pinned: { address: string; lastSeenMs: number } | null = null;

  accepts(address: string, hello: Document, nowMs: number): boolean {
    if (!isMongos(hello)) return isPrimary(hello);
    const pinned = this.pinned;
    const silent = !pinned || nowMs - pinned.lastSeenMs > CLOCK_SOURCE_SILENCE_MS;
    if (pinned && address === pinned.address) {
      pinned.lastSeenMs = nowMs;
      return true;
    }
    if (silent || address < pinned.address) {
      this.pinned = { address, lastSeenMs: nowMs };
      return true;
    }
    return false;
  }
}
const clockOf = (hello: Document): Date | null => (hello.localTime instanceof Date ? hello.localTime : null);

/**
 * "Now" for everything other instances compare with ours - leases, their
 * takeover, the reaper's scan, key expiry, outbox availability - read from
 * the MongoDB primary's clock (hello.localTime), so every instance judges by
 * one clock and an instance whose own clock is off by minutes neither reaps
 * live work nor stores records already expired. Read once at boot, then from
 * every heartbeat the driver's monitor already sends to the primary (every
 * heartbeatFrequencyMS, 10 s): no extra command and no pooled connection.
 * Between readings it advances by the monotonic clock; the error is half a
 * round trip plus the monotonic drift over those seconds - milliseconds,
 * against a 30 s lease. Behind mongos, one router's clock (ClockSource). A
 * server that reports no clock (only test emulators
 * do) leaves this host's clock in charge, with a warning: skew between
 * instances is then not tolerated (docs/runbooks/clock-skew.md).
 */
@Injectable()
export class ServerClock extends Clock implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ServerClock.name);
  private sample: ClockSample | null = null;
  private readonly source = new ClockSource();
  private warned = false;

  constructor(
    @InjectConnection() private readonly connection: Connection,
    private readonly metrics: MetricsService,
  ) {
    super();
  }

  now(): Date {
    return this.sample ? new Date(serverTimeAt(this.sample, performance.now())) : new Date();
  }

  /** Reads the server's clock before anything serves or schedules, then follows the heartbeats. */
  async onApplicationBootstrap(): Promise<void> {
    const sentAt = performance.now();
    const hello = await this.connection.db!.admin().command({ hello: 1 });
    this.take(clockOf(hello), sentAt, performance.now());
    this.connection.getClient().on('serverHeartbeatSucceeded', this.onHeartbeat);
  }

  onApplicationShutdown(): void {
    this.connection.getClient().off('serverHeartbeatSucceeded', this.onHeartbeat);
  }

  private readonly onHeartbeat = (event: ServerHeartbeatSucceededEvent): void => {
    // Only the primary's (or the pinned router's) clock counts; an awaited (streaming) heartbeat's
    // duration includes the server's wait, so it says nothing about the round trip.
    if (event.awaited || !this.source.accepts(event.connectionId, event.reply, performance.now())) return;
    const receivedAt = performance.now();
    this.take(clockOf(event.reply), receivedAt - event.duration, receivedAt);
  };

  private take(serverTime: Date | null, sentAt: number, receivedAt: number): void {
    if (!serverTime) return this.warnNoServerClock();
    this.sample = betterSample(this.sample, sampleOf(serverTime, sentAt, receivedAt));
    this.metrics.serverClockOffset.set((serverTimeAt(this.sample, performance.now()) - Date.now()) / 1000);
  }

  private warnNoServerClock(): void {
    if (this.warned) return;
    this.warned = true;
    this.logger.warn(
      "MongoDB reports no clock (hello.localTime; a test emulator): leases and expiry use this host's clock, " +
        'so instances must keep their clocks in step (docs/runbooks/clock-skew.md)',
    );
  }
}
