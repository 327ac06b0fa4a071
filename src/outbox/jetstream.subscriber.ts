import { Injectable, Logger } from '@nestjs/common';
import type { ConsumerMessages, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { MetricsService } from '../metrics/metrics.service.js';
import type { CloudEvent } from './cloud-event.js';
import { EventSubscriber, type DeliveredEvent, type SubscribeOptions, type Subscription } from './event-subscriber.port.js';
import { JetStreamBroker, jetStreamErrorCode, type BrokerClients } from './jetstream.broker.js';
import { sleepUnlessAborted } from '../common/sleep.js';
import { ACK_WAIT_MS, backoffMs, consumerLost, ensureDurableConsumer } from './jetstream-consumer.js';

const DEFAULT_MAX_BATCH = 10;
/**
 * The backlog is read from the consumer's info this often, besides at each delivery: a handler that hangs
 * delivers nothing more, and a gauge set only at deliveries would freeze at its last value while events
 * pile up behind it (the EventsConsumerLagging alert reads this gauge).
 */
const PENDING_REFRESH_MS = 15_000;

/**
 * Each pull request's life. The client notices a pull lost with its server (a cluster node or the consumer's
 * leader died) only after two missed idle heartbeats, half this each: the library's 30 s left a consumer idle
 * for 30-40 s after a leader change (test/events/nats-cluster); 5 s costs an empty pull every 5 s when idle.
 */
const PULL_EXPIRES_MS = 5_000;

type Handler = (batch: DeliveredEvent[]) => Promise<void>;

/** One message of a batch with the event it carries. */
interface Received {
  message: JsMsg;
  delivered: DeliveredEvent;
}

/** One subscription's reading of its consumer: `messages` is replaced when the consumer is recreated. */
interface Reading {
  readonly consumer: string;
  readonly maxBatch: number;
  readonly handle: Handler;
  readonly stopped: AbortSignal;
  messages: ConsumerMessages;
}

/**
 * The stream's consumer side: a durable pull consumer with explicit acks.
 * Messages come in batches of at most `maxBatch` (what has arrived, without
 * waiting to fill one); a batch is acked when the handler resolves. When it
 * throws, a batch of several is handed again one event at a time: those the
 * handler takes are acked, and only the ones it fails on are redelivered
 * (nak, with backoff capped at 30 s; each counted in events_handler_failures_total).
 * A failing event is never terminated (dropped): these are payment events,
 * retried until the handler takes them.
 * Two subscriptions under one durable name share the messages: each goes to
 * one of them. A durable consumer deleted while it is read (by an operator,
 * or with its stream) is recreated with the configuration it was first
 * created with, and read again (events_consumer_recreated_total).
 */
@Injectable()
export class JetStreamEventSubscriber extends EventSubscriber {
  private readonly logger = new Logger('Events');

  constructor(
    private readonly broker: JetStreamBroker,
    private readonly metrics: MetricsService,
  ) {
    super();
  }

  async subscribe(consumer: string, handle: Handler, options: SubscribeOptions = {}): Promise<Subscription> {
    const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    const clients = await this.broker.clients();
    const { info } = await ensureDurableConsumer(clients.jsm, this.broker.stream, consumer, maxBatch);
    this.metrics.eventsConsumerPending.set({ consumer }, info.num_pending);
    const stopping = new AbortController();
    const messages = await this.consume(clients, consumer, maxBatch);
    const reading: Reading = { consumer, maxBatch, handle, stopped: stopping.signal, messages };
    const loop = this.readUntilStopped(clients, reading);
    const stopWatching = this.watchPending(clients.jsm, consumer, options.pendingRefreshMs ?? PENDING_REFRESH_MS);
    return {
      stop: async () => {
        stopWatching();
        stopping.abort();
        reading.messages.stop();
        await loop;
      },
    };
  }

  private async consume({ js }: BrokerClients, consumer: string, maxBatch: number): Promise<ConsumerMessages> {
    return (await js.consumers.get(this.broker.stream, consumer)).consume({ max_messages: maxBatch, expires: PULL_EXPIRES_MS });
  }

  /**
   * Delivers until the subscription stops. Once the library reports the consumer or its stream gone, what it
   * has pulled is delivered, and the consumer is recreated and read again: left alone, it would pull from
   * nothing until a restart, and the stream's events would wait unseen.
   */
  private async readUntilStopped(clients: BrokerClients, reading: Reading): Promise<void> {
    for (let failures = 0; ;) {
      const lost = this.stopWhenLost(reading.consumer, reading.messages);
      try {
        await this.run(reading);
        if (reading.stopped.aborted || !lost()) return;
        failures = 0;
      } catch (error) {
        // The library ended the reading with an error (a closed connection, a refused pull): read again, as after
        // a lost consumer, rather than let the subscription end unseen until a restart.
        if (reading.stopped.aborted) return;
        reading.messages.stop();
        failures += 1;
        this.logger.error({ msg: 'consumer reading failed: reading again', consumer: reading.consumer, error: String(error) });
        await sleepUnlessAborted(backoffMs(failures), reading.stopped);
      }
      const messages = await this.recreate(clients, reading);
      if (!messages) return;
      reading.messages = messages;
    }
  }

  /** Ends `messages` once the library reports its consumer or stream gone; says whether it did. */
  private stopWhenLost(consumer: string, messages: ConsumerMessages): () => boolean {
    let lost = false;
    const watch = async () => {
      for await (const status of messages.status()) {
        if (!consumerLost(status)) continue;
        this.logger.warn({ msg: 'durable consumer lost: recreating it', consumer, status: status.type });
        lost = true;
        messages.stop();
        return;
      }
    };
    void watch().catch((error: unknown) => this.logger.error({ msg: 'consumer status unreadable', consumer, error: String(error) }));
    return () => lost;
  }

  /**
   * Recreates the lost consumer and reads it again; while the stream or the consumer cannot be created (the
   * stream not there yet, the broker away), tries again 1 s later, doubling to 30 s. Null once stopped.
   */
  private async recreate(clients: BrokerClients, { consumer, maxBatch, stopped }: Reading): Promise<ConsumerMessages | null> {
    for (let attempt = 1; !stopped.aborted; attempt++) {
      try {
        const { info, created } = await ensureDurableConsumer(clients.jsm, this.broker.stream, consumer, maxBatch);
        if (created) this.metrics.eventsConsumerRecreated.inc({ consumer });
        this.logger.warn({ msg: created ? 'durable consumer recreated' : 'durable consumer found again', consumer, attempt });
        this.metrics.eventsConsumerPending.set({ consumer }, info.num_pending);
        const messages = await this.consume(clients, consumer, maxBatch);
        if (!stopped.aborted) return messages;
        messages.stop();
      } catch (error) {
        this.metrics.jetstreamErrors.inc({ operation: 'consumer_create', code: jetStreamErrorCode(error) });
        const delayMs = backoffMs(attempt);
        this.logger.warn({ msg: 'durable consumer not recreated yet', consumer, retryInMs: delayMs, error: (error as Error).message });
        await sleepUnlessAborted(delayMs, stopped);
      }
    }
    return null;
  }

  /** Reads the consumer's backlog every `everyMs` (one read at a time: a slow answer during an outage never piles up). */
  private watchPending(jsm: JetStreamManager, consumer: string, everyMs: number): () => void {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const next = () => {
      timer = setTimeout(() => void read(), everyMs);
      timer.unref();
    };
    const read = async () => {
      try {
        const info = await jsm.consumers.info(this.broker.stream, consumer);
        if (!stopped) this.metrics.eventsConsumerPending.set({ consumer }, info.num_pending);
      } catch (error) {
        // The broker is away (EventsBrokerUnreachable says so): the gauge keeps its last reading until it is back.
        this.metrics.jetstreamErrors.inc({ operation: 'consumer_info', code: jetStreamErrorCode(error) });
      }
      if (!stopped) next();
    };
    next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  private async run(reading: Reading): Promise<void> {
    const iterator = reading.messages[Symbol.asyncIterator]();
    let waiting: Promise<IteratorResult<JsMsg>> | null = null;
    for (;;) {
      const first = await (waiting ?? iterator.next());
      waiting = null;
      if (first.done) return;
      const batch: JsMsg[] = [first.value];
      // What has already arrived joins the batch; nothing waits for a full one. (The iterator's getPending()
      // over-counts after its internal status entries, so "arrived" is: resolves before the next macrotask.)
      while (batch.length < reading.maxBatch) {
        const next = iterator.next();
        let arrived: IteratorResult<JsMsg> | null;
        try {
          arrived = await Promise.race([next, new Promise<null>((resolve) => setImmediate(() => resolve(null)))]);
        } catch (error) {
          // The reading ended with an error while this batch gathered: what arrived is handed on first (left
          // unacked, it would come back only after the ack wait, 30 s), then the consumer is read again.
          await this.handOn(reading, batch);
          throw error;
        }
        if (arrived === null) {
          waiting = next;
          break;
        }
        if (arrived.done) break;
        batch.push(arrived.value);
      }
      await this.handOn(reading, batch);
    }
  }

  /**
   * A batch to the handler; when stopping, what the library had already pulled goes back at once, for another
   * instance to take, instead of through the handler (each call may take seconds during a store outage, and a
   * shutdown would wait them out).
   */
  private async handOn(reading: Reading, batch: JsMsg[]): Promise<void> {
    if (reading.stopped.aborted) batch.forEach((message) => message.nak());
    else await this.deliver(reading, batch);
  }

  private async deliver(reading: Reading, messages: JsMsg[]): Promise<void> {
    const { consumer } = reading;
    const received = this.readable(consumer, messages);
    const last = messages[messages.length - 1];
    this.metrics.eventsConsumerPending.set({ consumer }, last.info.pending);
    const redelivered = received.filter(({ delivered }) => delivered.redeliveries > 0).length;
    if (redelivered > 0) this.metrics.eventsConsumerRedeliveries.inc({ consumer }, redelivered);
    if (received.length === 0) return;
    // A long handler tells the server it is still working, so its events are not redelivered to another instance
    // meanwhile; this covers the one-at-a-time pass after a failed batch too, where the later events wait their turn.
    const unsettled = new Set(received.map(({ message }) => message));
    const progress = setInterval(() => unsettled.forEach((message) => message.working()), ACK_WAIT_MS / 3);
    try {
      await this.settle(reading, received, unsettled);
    } finally {
      clearInterval(progress);
    }
  }

  /** The batch's CloudEvents; anything else is terminated (redelivering it would never help), loudly. */
  private readable(consumer: string, messages: JsMsg[]): Received[] {
    const received: Received[] = [];
    for (const message of messages) {
      const event = parse(message);
      if (event) received.push({ message, delivered: { event, redeliveries: message.info.deliveryCount - 1 } });
      else {
        this.logger.error({ msg: 'unreadable message terminated', consumer, subject: message.subject, sequence: message.seq });
        message.term();
      }
    }
    return received;
  }

  /**
   * Acks the events the handler takes and naks the others. A failed batch of several is handed back one event at
   * a time, so an event the handler always fails on (a poison event) holds back only itself, not the good events
   * that happened to share its batch.
   */
  private async settle({ consumer, handle, stopped }: Reading, received: Received[], unsettled: Set<JsMsg>): Promise<void> {
    const failure = await this.attempt(received, handle, unsettled);
    if (!failure) return;
    if (received.length === 1) return this.redeliver(consumer, received[0], failure, unsettled);
    this.logger.warn({
      msg: 'batch handler failed: handing its events one at a time',
      consumer,
      events: received.length,
      error: failure.message,
    });
    for (const one of received) {
      // A shutdown does not wait out the pass (one handler call per event): the rest go back at once.
      if (stopped.aborted) {
        unsettled.forEach((message) => message.nak());
        unsettled.clear();
        return;
      }
      const failed = await this.attempt([one], handle, unsettled);
      if (failed) this.redeliver(consumer, one, failed, unsettled);
    }
  }

  /** One call of the handler; its events are acked when it resolves. Returns what it threw, if it threw. */
  private async attempt(received: Received[], handle: Handler, unsettled: Set<JsMsg>): Promise<Error | null> {
    try {
      await handle(received.map(({ delivered }) => delivered));
    } catch (error) {
      this.metrics.jetstreamErrors.inc({ operation: 'consume', code: jetStreamErrorCode(error) });
      return error instanceof Error ? error : new Error(String(error));
    }
    for (const { message } of received) {
      message.ack();
      unsettled.delete(message);
    }
    return null;
  }

  /**
   * A failed event comes back after a backoff (1 s doubling to 30 s), as often as it fails. It is never terminated: these
   * are payment events, and one terminated is lost for this consumer (for the webhook dispatcher, a merchant never
   * hears of a capture or a refund); a poison event costs one retry at most every 30 s until the handler is fixed.
   */
  private redeliver(consumer: string, { message, delivered }: Received, error: Error, unsettled: Set<JsMsg>): void {
    this.logger.warn({
      msg: 'event handler failed: redelivering',
      consumer,
      event: delivered.event.id,
      deliveries: message.info.deliveryCount,
      error: error.message,
    });
    this.metrics.eventsHandlerFailures.inc({ consumer });
    message.nak(backoffMs(message.info.deliveryCount));
    unsettled.delete(message);
  }
}

function parse(message: JsMsg): CloudEvent | null {
  try {
    const event = message.json<CloudEvent>();
    return event && typeof event === 'object' && typeof event.id === 'string' && typeof event.type === 'string' ? event : null;
  } catch {
    return null;
  }
}
