import { Schema } from 'mongoose';

export const WEBHOOK_SUBJECT_MODEL = 'WebhookSubject';

/**
 * A data subject (the keyed digest of a tenant's customer id, SubjectDigests) that webhook payloads name: the
 * meeting point of the dispatcher and an erasure (WebhookSubjectRepository).
 */
export interface WebhookSubject {
  _id: string;
  /** The subject's last erasure: events that happened before it go out with a pseudonym. */
  erasedAt: Date | null;
  /** When the store may drop it (TTL): a retention horizon past its last write. */
  expiresAt: Date;
}

export const WebhookSubjectSchema = new Schema<WebhookSubject>(
  {
    _id: { type: String, required: true },
    erasedAt: { type: Date, default: null },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'webhook_subjects', versionKey: false, strict: 'throw' },
);

WebhookSubjectSchema.index({ expiresAt: 1 }, { name: 'retention', expireAfterSeconds: 0 });
