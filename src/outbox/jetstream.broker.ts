import { readFileSync } from 'node:fs';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { jetstream, jetstreamManager, JetStreamApiError, JetStreamApiCodes, StorageType } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import {
  connect,
  credsAuthenticator,
  NoRespondersError,
  TimeoutError,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/transport-node';
import { natsConfig, outboxConfig, type NatsConfig, type OutboxConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { requiredStream, streamContradictions } from './jetstream-stream.js';

/** The stream exists with settings that contradict what the relay needs: the service must not start on it. */
export class StreamRefusedError extends Error {
  constructor(stream: string, problems: string[]) {
    super(`NATS stream ${stream} cannot take this service's events: ${problems.join('; ')}. Fix or delete the stream, or set NATS_STREAM.`);
    this.name = 'StreamRefusedError';
  }
}

export type BrokerState = 'off' | 'connecting' | 'connected' | 'disconnected' | 'refused';

export interface BrokerClients {
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/** A label for jetstream_errors_total: the JetStream API code, or the kind of transport failure. */
export function jetStreamErrorCode(error: unknown): string {
  if (error instanceof JetStreamApiError) return String(error.code);
  if (error instanceof TimeoutError) return 'timeout';
  if (error instanceof NoRespondersError || noStreamAnswered(error)) return 'no_responders';
  if (error instanceof StreamRefusedError) return 'stream_refused';
  return 'other';
}

/**
 * A publish that no stream answered: the client reports it as "JetStream not enabled" (its request had no
 * responders), whether JetStream is down or no stream takes the subject any more. The class is not exported.
 */
export function noStreamAnswered(error: unknown): boolean {
  return error instanceof Error && error.name === 'JetStreamNotEnabled';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Between two tries of the first connection, as between two reconnects. */
const RETRY_MS = 1000;
/** A connection problem that repeats (a refused password, an untrusted certificate) is logged at most this often. */
const PROBLEM_LOG_EVERY_MS = 60_000;

/**
 * The one NATS connection of the process, and the stream it publishes to.
 * Boot waits NATS_CONNECT_WAIT_MS for it: a stream that contradicts our
 * needs stops the boot with one line; an unreachable broker does not (the
 * outbox is the buffer: creates go on, and the relay publishes once the
 * connection is up). The client reconnects forever, also past refused
 * credentials (fixed on the server, they work again without a restart), and
 * the reason it cannot connect is logged (once a minute while it lasts).
 */
@Injectable()
export class JetStreamBroker implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Events');
  private connection?: NatsConnection;
  private ready?: Promise<BrokerClients>;
  private stopped = false;
  private problemLoggedAt = 0;
  private problemsSinceLog = 0;
  /** JetStream answered and the stream is as we need it: only then does a connection count as up. */
  private streamChecked = false;
  /** A check of the stream after a publish nobody answered, while one runs (recheckStream). */
  private recheck?: Promise<void>;
  state: BrokerState = 'off';
  refusal?: string;

  constructor(
    @Inject(natsConfig.KEY) private readonly nats: NatsConfig,
    @Inject(outboxConfig.KEY) private readonly outbox: OutboxConfig,
    private readonly metrics: MetricsService,
  ) {}

  get enabled(): boolean {
    return this.nats.url !== undefined;
  }

  get stream(): string {
    return this.nats.stream;
  }

  async onModuleInit(): Promise<void> {
    if (!this.enabled) return;
    this.state = 'connecting';
    this.metrics.eventsBrokerConnected.set(0);
    const ready = this.start();
    this.ready = ready;
    ready.catch(() => undefined); // observed by every publish; a refusal at boot is rethrown below
    const first = await Promise.race([
      ready.then(() => 'ready' as const),
      sleep(this.nats.connectWaitMs).then(() => 'waiting' as const),
    ]).catch((error: unknown) => {
      if (error instanceof StreamRefusedError) throw error;
      return 'waiting' as const;
    });
    if (first === 'waiting') {
      this.logger.warn(`NATS at ${this.nats.server} not reachable yet: starting degraded; events wait in the outbox until it is`);
    }
  }

  /** The clients once connected and the stream checked; rejects while the stream is refused. */
  clients(): Promise<BrokerClients> {
    if (!this.ready) return Promise.reject(new Error('NATS_URL is not set'));
    return this.ready;
  }

  /**
   * A publish nobody answered: the stream may have been deleted while the service ran, and only the boot made
   * it, so events waited in the outbox until a restart. It is checked again as at boot (created when missing,
   * refused when it contradicts), one check at a time; the relay's next try of the event then lands in it.
   * Consumers recreate their durable consumers on their own (JetStreamEventSubscriber).
   */
  recheckStream(): void {
    const connection = this.connection;
    if (!connection || this.stopped || this.recheck) return;
    this.recheck = this.ensureStream(connection)
      .then(
        () => {
          // A stream refused at an earlier check and put right since: the broker is ours again (health says so).
          if (this.state !== 'refused') return;
          this.state = 'connected';
          this.refusal = undefined;
        },
        (error: unknown) => {
          // Once a minute at most: every publish nobody answers starts another check once this one ends.
          if (!this.stopped) this.problem(`NATS stream ${this.nats.stream} checked again and refused: ${reason(error)}`);
        },
      )
      .finally(() => (this.recheck = undefined));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.connection?.close().catch(() => undefined);
  }

  private async start(): Promise<BrokerClients> {
    const connection = await this.firstConnection({
      servers: this.nats.servers,
      name: 'idempotent-orders',
      ...(this.nats.tls ? { tls: { ...this.nats.tlsFiles } } : {}),
      ...(this.nats.user ? { user: this.nats.user, pass: this.nats.pass } : {}),
      ...(this.nats.token ? { token: this.nats.token } : {}),
      ...(this.nats.credsFile ? { authenticator: credsAuthenticator(readFileSync(this.nats.credsFile)) } : {}),
      maxReconnectAttempts: -1,
      reconnectTimeWait: RETRY_MS,
      // The client's default gives up after two refusals of the same credentials, and would leave the service
      // without a broker until a restart; it retries like any reconnect instead, and the reason is logged.
      ignoreAuthErrorAbort: true,
    });
    if (this.stopped) {
      // Shut down while the connection was being made: nobody will close it later.
      await connection.close();
      throw new Error('NATS connection closed: the service is shutting down');
    }
    this.connection = connection;
    void this.watch(connection);
    const jsm = await this.ensureStream(connection);
    this.streamChecked = true;
    this.connected(true);
    return { js: jetstream(connection, { timeout: this.outbox.publishTimeoutMs }), jsm };
  }

  /**
   * Tries until the broker takes the connection, logging why it does not. The client hides the reason
   * twice: its own wait for a first connection (waitOnFirstConnect) retries in silence, and with reconnects
   * on, a first connection whose TLS handshake fails (an untrusted certificate, no client certificate) is
   * retried until its 20 s timeout and reported as "timeout". So each try first connects once without
   * reconnects, which fails at once with the reason, and then makes the connection the service keeps.
   */
  private async firstConnection(options: ConnectionOptions): Promise<NatsConnection> {
    for (;;) {
      if (this.stopped) throw new Error('NATS connection not made: the service is shutting down');
      try {
        await (await connect({ ...options, reconnect: false })).close();
        return await connect(options);
      } catch (error) {
        if (this.stopped) throw error;
        this.metrics.jetstreamErrors.inc({ operation: 'connect', code: jetStreamErrorCode(error) });
        this.problem(`NATS at ${this.nats.server} did not take the connection: ${reason(error)}`);
        await sleep(RETRY_MS);
      }
    }
  }

  /**
   * Creates the stream when missing; refuses one that contradicts; retries while JetStream does not answer.
   * A connection is not yet JetStream: a server may take clients before its JetStream is up (a cluster
   * electing its meta leader, a server started without -js), so the manager's own first call is retried
   * here too. Until this returns the broker counts as down: health says degraded, events wait.
   */
  private async ensureStream(connection: NatsConnection): Promise<JetStreamManager> {
    const required = requiredStream(this.nats.stream, this.nats.replicas, this.outbox);
    for (;;) {
      try {
        const jsm = await jetstreamManager(connection, { timeout: this.outbox.publishTimeoutMs });
        const info = await jsm.streams.info(required.name).catch(async (error: unknown) => {
          if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) throw error;
          this.logger.log(
            `Creating NATS stream ${required.name} (${required.subjects.join(', ')}, duplicate window ${required.duplicate_window / 1e9} s)`,
          );
          return jsm.streams.add({ ...required, storage: StorageType.File });
        });
        const problems = streamContradictions(info.config, required);
        if (problems.length > 0) {
          this.state = 'refused';
          this.refusal = new StreamRefusedError(required.name, problems).message;
          throw new StreamRefusedError(required.name, problems);
        }
        if (info.config.num_replicas !== required.num_replicas) {
          this.logger.warn(
            `NATS stream ${required.name} has ${info.config.num_replicas} replica(s), NATS_STREAM_REPLICAS says ${required.num_replicas}`,
          );
        }
        return jsm;
      } catch (error) {
        if (error instanceof StreamRefusedError || this.stopped) throw error;
        this.metrics.jetstreamErrors.inc({ operation: 'stream', code: jetStreamErrorCode(error) });
        this.problem(`NATS stream ${required.name} not checked yet (is JetStream enabled on ${this.nats.server}?): ${reason(error)}`);
        await sleep(RETRY_MS);
      }
    }
  }

  private async watch(connection: NatsConnection): Promise<void> {
    for await (const status of connection.status()) {
      if (status.type === 'disconnect') this.connected(false);
      if (status.type === 'reconnect') this.connected(true);
      // What the server said while reconnecting, e.g. "Authorization Violation" after a credential rotation.
      if (status.type === 'error') this.problem(`NATS at ${this.nats.server}: ${reason(status.error)}`);
    }
  }

  /** Logs a connection problem; the same kind of line at most once a minute, saying how many it stood for. */
  private problem(message: string): void {
    this.problemsSinceLog += 1;
    const now = Date.now();
    if (now - this.problemLoggedAt < PROBLEM_LOG_EVERY_MS) return;
    const more = this.problemsSinceLog > 1 ? ` (${this.problemsSinceLog - 1} more since the last such line)` : '';
    this.logger.warn(`${message}; retrying every ${RETRY_MS / 1000} s${more}`);
    this.problemLoggedAt = now;
    this.problemsSinceLog = 0;
  }

  private connected(up: boolean): void {
    if (up && !this.streamChecked) return; // connected, but JetStream has not answered yet: still down for us
    if (this.state !== 'refused') this.state = up ? 'connected' : 'disconnected';
    this.metrics.eventsBrokerConnected.set(up ? 1 : 0);
    if (!up) this.logger.warn(`NATS at ${this.nats.server} disconnected: events wait in the outbox`);
    else this.logger.log(`NATS at ${this.nats.server} connected`);
  }
}

/** An error's message with its cause's (the TLS or socket error under a NATS connection error). */
function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : null;
  return cause && !message.includes(cause) ? `${message} (${cause})` : message;
}
