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
 * against a 30 s lease. A server that reports no clock (only test emulators
 * do) leaves this host's clock in charge, with a warning: skew between
 * instances is then not tolerated (docs/runbooks/clock-skew.md).
 */
@Injectable()
export class ServerClock extends Clock implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ServerClock.name);
  private sample: ClockSample | null = null;
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
    // Only the primary's clock counts; an awaited (streaming) heartbeat's duration includes the
    // server's wait, so it says nothing about the round trip.
    if (event.awaited || !isPrimary(event.reply)) return;
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
