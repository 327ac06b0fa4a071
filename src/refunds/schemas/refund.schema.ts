import { Schema } from 'mongoose';
import { REFUND_FAILURE, REFUND_REASONS, REFUND_STATES, type Refund } from '../refund.js';

export const REFUND_MODEL = 'Refund';

export const RefundSchema = new Schema<Refund>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    orderId: { type: String, required: true },
    amountMinor: { type: Number, required: true },
    currency: { type: String, required: true },
    reason: { type: String, enum: REFUND_REASONS, required: true },
    state: { type: String, enum: REFUND_STATES, required: true },
    failureReason: { type: String, enum: [...Object.values(REFUND_FAILURE), null], default: null },
    providerKey: { type: String, required: true },
    providerRefundId: { type: String, default: null },
    idempotency: {
      type: new Schema({ recordId: { type: String, required: true }, attempt: { type: Number, required: true } }, { _id: false }),
      required: true,
    },
    stateHistory: { type: Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'refunds', versionKey: false, strict: 'throw', minimize: false },
);

// _id is derived from the claim; the provider key from _id. Unique anyway: two refunds under one provider key
// would be one refund at the provider recorded twice.
RefundSchema.index({ providerKey: 1 }, { unique: true, name: 'provider_key_unique' });
// GET /v1/orders/:id/refunds, oldest first.
RefundSchema.index({ tenant: 1, orderId: 1, createdAt: 1 }, { name: 'tenant_order' });
