import { Schema } from 'mongoose';
import { PAYMENT_STATUSES, type Payment } from '../payment.js';

export const PAYMENT_MODEL = 'Payment';

export const PaymentSchema = new Schema<Payment>(
  {
    _id: { type: String, required: true },
    tenant: { type: String, required: true },
    orderId: { type: String, required: true },
    chargeKey: { type: String, required: true },
    providerChargeId: { type: String, required: true },
    amountMinor: { type: Number, required: true },
    currency: { type: String, required: true },
    status: { type: String, enum: PAYMENT_STATUSES, required: true },
    capturedMinor: { type: Number },
    providerOperationId: { type: String },
    createdAt: { type: Date, required: true },
  },
  { collection: 'payments', versionKey: false, strict: 'throw' },
);

// One payment per provider charge key: a resumed charge can never be recorded twice.
PaymentSchema.index({ chargeKey: 1 }, { unique: true, name: 'charge_key_unique' });
PaymentSchema.index({ tenant: 1, orderId: 1 }, { name: 'tenant_order' });
