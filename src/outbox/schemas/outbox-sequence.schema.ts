import { Schema } from 'mongoose';

export const OUTBOX_SEQUENCE_MODEL = 'OutboxSequence';

/**
 * The last sequence number given to an aggregate's events. A counter of its
 * own, not the highest sequence among the events: published events expire
 * after a week (published_ttl), and a refund a month later must still get the
 * next number, not 1 again.
 */
export interface OutboxSequence {
  /** The aggregate id (orders: the order id). */
  _id: string;
  last: number;
}

export const OutboxSequenceSchema = new Schema<OutboxSequence>(
  {
    _id: { type: String, required: true },
    last: { type: Number, required: true },
  },
  { collection: 'outbox_sequences', versionKey: false, strict: 'throw' },
);
