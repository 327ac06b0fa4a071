import { Injectable, Logger } from '@nestjs/common';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { MetricsService } from '../metrics/metrics.service.js';
import type { CloudEvent } from './cloud-event.js';
import { EventSubscriber, type DeliveredEvent, type SubscribeOptions, type Subscription } from './event-subscriber.port.js';
import { JetStreamBroker, jetStreamErrorCode } from './jetstream.broker.js';
import { STREAM_SUBJECTS } from './jetstream-stream.js';

/** A batch not acknowledged within this is delivered again (the handler signals progress meanwhile). */
const ACK_WAIT_MS = 30_000;
const DEFAULT_MAX_BATCH = 10;
/**
 * The backlog is read from the consumer's info this often, besides at each delivery: a handler that hangs
 * delivers nothing more, and a gauge set only at deliveries would freeze at its last value while events
 * pile up behind it (the EventsConsumerLagging alert reads this gauge).
 */
const PENDING_REFRESH_MS = 15_000;

/** Redelivery after a failed batch: 1 s, 2 s, 4 s ... capped at 30 s, so a failing handler does not spin. */
export function nakDelayMs(deliveryCount: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, deliveryCount - 1));
}

/**
 * The stream's consumer side: a durable pull consumer with explicit acks.
 * Messages come in batches of at most `maxBatch` (what has arrived, without
 * waiting to fill one); a batch is acked when the handler resolves and
 * redelivered (nak, with backoff) when it throws. Two subscriptions under one
 * durable name share the messages: each goes to one of them.
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

  async subscribe(
    consumer: string,
    handle: (batch: DeliveredEvent[]) => Promise<void>,
    options: SubscribeOptions = {},
  ): Promise<Subscription> {
    const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
    const { js, jsm } = await this.broker.clients();
    const info = await jsm.consumers.info(this.broker.stream, consumer).catch((error: unknown) => {
      if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.ConsumerNotFound) throw error;
      // Two instances may both create it: an add with the same configuration is accepted twice.
      return jsm.consumers.add(this.broker.stream, {
        durable_name: consumer,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: STREAM_SUBJECTS,
        ack_wait: ACK_WAIT_MS * 1e6,
        max_ack_pending: Math.max(1000, maxBatch * 10),
      });
    });
    this.metrics.eventsConsumerPending.set({ consumer }, info.num_pending);
    const messages = await (await js.consumers.get(this.broker.stream, consumer)).consume({ max_messages: maxBatch });
    const loop = this.run(consumer, messages, maxBatch, handle);
    const stopWatching = this.watchPending(jsm, consumer, options.pendingRefreshMs ?? PENDING_REFRESH_MS);
    return {
      stop: async () => {
        stopWatching();
        messages.stop();
        await loop;
      },
    };
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

  private async run(consumer: string, messages: ConsumerMessages, maxBatch: number, handle: (batch: DeliveredEvent[]) => Promise<void>) {
    const iterator = messages[Symbol.asyncIterator]();
    let waiting: Promise<IteratorResult<JsMsg>> | null = null;
    for (;;) {
      const first = await (waiting ?? iterator.next());
      waiting = null;
      if (first.done) return;
      const batch: JsMsg[] = [first.value];
      // What has already arrived joins the batch; nothing waits for a full one. (The iterator's getPending()
      // over-counts after its internal status entries, so "arrived" is: resolves before the next macrotask.)
      while (batch.length < maxBatch) {
        const next = iterator.next();
        const arrived = await Promise.race([next, new Promise<null>((resolve) => setImmediate(() => resolve(null)))]);
        if (arrived === null) {
          waiting = next;
          break;
        }
        if (arrived.done) break;
        batch.push(arrived.value);
      }
      await this.deliver(consumer, batch, handle);
    }
  }

  private async deliver(consumer: string, messages: JsMsg[], handle: (batch: DeliveredEvent[]) => Promise<void>): Promise<void> {
    const batch: DeliveredEvent[] = [];
    const readable: JsMsg[] = [];
    for (const message of messages) {
      const event = parse(message);
      if (!event) {
        // Not a CloudEvent of ours: redelivering it would never help; it is dropped for this consumer, loudly.
        this.logger.error({ msg: 'unreadable message terminated', consumer, subject: message.subject, sequence: message.seq });
        message.term();
        continue;
      }
      batch.push({ event, redeliveries: message.info.deliveryCount - 1 });
      readable.push(message);
    }
    const last = messages[messages.length - 1];
    this.metrics.eventsConsumerPending.set({ consumer }, last.info.pending);
    const redelivered = batch.filter((delivered) => delivered.redeliveries > 0).length;
    if (redelivered > 0) this.metrics.eventsConsumerRedeliveries.inc({ consumer }, redelivered);
    if (batch.length === 0) return;
    // A long handler tells the server it is still working, so the batch is not redelivered to another instance meanwhile.
    const progress = setInterval(() => readable.forEach((message) => message.working()), ACK_WAIT_MS / 3);
    try {
      await handle(batch);
      readable.forEach((message) => message.ack());
    } catch (error) {
      this.metrics.jetstreamErrors.inc({ operation: 'consume', code: jetStreamErrorCode(error) });
      this.logger.warn({ msg: 'batch handler failed: redelivering', consumer, events: batch.length, error: (error as Error).message });
      readable.forEach((message) => message.nak(nakDelayMs(message.info.deliveryCount)));
    } finally {
      clearInterval(progress);
    }
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
