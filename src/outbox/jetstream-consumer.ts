import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerNotification,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { STREAM_SUBJECTS } from './jetstream-stream.js';

/** A batch not acknowledged within this is delivered again (the handler signals progress meanwhile). */
export const ACK_WAIT_MS = 30_000;

/** 1 s, 2 s, 4 s ... capped at 30 s: between two deliveries of a failing event, and two tries to recreate a lost consumer. */
export function backoffMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, attempt - 1));
}

/**
 * A durable consumer of the whole stream with explicit acks. The one configuration it is created with, at the
 * first subscription and again once lost; from the stream's start, so a recreated consumer delivers what the
 * stream holds again (consumers deduplicate on the event id; the webhook dispatcher drops events past its horizon).
 */
export function durableConsumerConfig(consumer: string, maxBatch: number): Partial<ConsumerConfig> {
  return {
    durable_name: consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: STREAM_SUBJECTS,
    ack_wait: ACK_WAIT_MS * 1e6,
    max_ack_pending: Math.max(1000, maxBatch * 10),
  };
}

/**
 * The durable consumer's info, created first when missing (`created` says it was). Two instances may both
 * create it: an add with the same configuration is accepted twice.
 */
export async function ensureDurableConsumer(
  jsm: JetStreamManager,
  stream: string,
  consumer: string,
  maxBatch: number,
): Promise<{ info: ConsumerInfo; created: boolean }> {
  try {
    return { info: await jsm.consumers.info(stream, consumer), created: false };
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.ConsumerNotFound) throw error;
    return { info: await jsm.consumers.add(stream, durableConsumerConfig(consumer, maxBatch)), created: true };
  }
}

/**
 * What `consume()` reports, on its status iterator, when the durable consumer or its stream is gone (deleted by
 * an operator, or with its stream). The library keeps pulling from nothing: a named consumer is never recreated
 * by it (only ordered ones are), so nothing is delivered again until someone recreates it.
 */
const LOST: ReadonlySet<ConsumerNotification['type']> = new Set(['consumer_deleted', 'consumer_not_found', 'stream_not_found']);

export function consumerLost(status: ConsumerNotification): boolean {
  return LOST.has(status.type);
}
