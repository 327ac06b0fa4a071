import { Schema } from 'mongoose';
import { ORDER_STATES } from '../order-state.js';
import type { Order } from '../order.js';

export const ORDER_MODEL = 'Order';

const ItemSchema = new Schema(
  { sku: { type: String, required: true }, quantity: { type: Number, required: true }, unitPriceMinor: { type: Number, required: true } },
  { _id: false },
);

export const OrderSchema = new Schema<Order>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    customerId: { type: String, required: true },
    currency: { type: String, required: true },
    items: { type: [ItemSchema], required: true },
    amountMinor: { type: Number, required: true },
    paymentToken: { type: String, default: null },
    state: { type: String, enum: ORDER_STATES, required: true },
    stateHistory: { type: Schema.Types.Mixed, required: true },
    failureReason: { type: String, default: null },
    paymentId: { type: String, default: null },
    idempotency: {
      type: new Schema({ recordId: { type: String, required: true }, attempt: { type: Number, required: true } }, { _id: false }),
      required: true,
    },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'orders', versionKey: false, strict: 'throw', minimize: false },
);

// The unique backstop is _id itself: it is derived from the idempotency claim
// (orderIdForClaim), so a second order for one attempt is a duplicate key.
OrderSchema.index({ 'idempotency.recordId': 1 }, { name: 'idempotency_record' });
// Listing newest first within a tenant; _id breaks ties for the cursor.
OrderSchema.index({ tenant: 1, createdAt: -1, _id: -1 }, { name: 'tenant_created' });
OrderSchema.index({ tenant: 1, customerId: 1 }, { name: 'tenant_customer' });
