import { Schema } from 'mongoose';
import { ORDER_STATES } from '../order-state.js';
import { CAPTURE_MODES, type Order } from '../order.js';

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
    // Defaults: an order stored before these fields existed was charged automatically (or not at all).
    capture: { type: String, enum: CAPTURE_MODES, default: 'automatic' },
    authorizedMinor: { type: Number, default: 0 },
    capturedMinor: { type: Number, default: 0 },
    refundedMinor: { type: Number, default: 0 },
    refundableMinor: { type: Number, default: 0 },
    authorizationExpiresAt: { type: Date, default: null },
    pendingAction: {
      type: new Schema(
        {
          kind: { type: String, enum: ['capture', 'void'], required: true },
          recordId: { type: String, required: true },
          claimId: { type: String, required: true },
          amountMinor: { type: Number, required: true },
          startedAt: { type: Date, required: true },
        },
        { _id: false },
      ),
      default: null,
    },
    processingCheckAfter: { type: Date, default: undefined },
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
// The authorizations the expiry sweep looks at: authorized orders by when they lapse.
OrderSchema.index({ state: 1, authorizationExpiresAt: 1 }, { name: 'state_authorization_expiry' });
// A capture or void found again by its attempt's claim (a retry, the reaper); sparse: only orders with one in flight.
OrderSchema.index({ 'pendingAction.claimId': 1 }, { name: 'pending_action_claim', sparse: true });
// Orders waiting on an asynchronous charge past the processing bound (the processing reconciliation).
OrderSchema.index({ state: 1, 'stateHistory.processing': 1 }, { name: 'state_processing_since' });
