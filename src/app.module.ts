import { Module } from '@nestjs/common';
import { StripeWebhooksModule } from './payment-stripe/stripe-webhooks.module.js';
import { AuthModule } from './auth/auth.module.js';
import { CommonModule } from './common/common.module.js';
import { AppConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { AppIdempotencyModule } from './idempotency/idempotency.setup.js';
import { AdminModule } from './admin/admin.module.js';
import { AsyncPaymentsModule } from './async-payments/async-payments.module.js';
import { CancelByKeyModule } from './cancel-by-key/cancel-by-key.module.js';
import { CaptureVoidModule } from './capture-void/capture-void.module.js';
import { LoggingModule } from './logging/logging.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PaymentSimulatorModule } from './payment-simulator/payment-simulator.module.js';
import { PrivacyModule } from './privacy/privacy.module.js';
import { RefundsModule } from './refunds/refunds.module.js';
import { ReconciliationModule } from './reconciliation/reconciliation.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { WebhookEndpointsModule } from './webhook-endpoints/webhook-endpoints.module.js';

@Module({
  imports: [
    AppConfigModule,
    LoggingModule,
    CommonModule,
    MetricsModule,
    DatabaseModule,
    AuthModule,
    AppIdempotencyModule,
    // The payment provider's adapters, bound once for the whole app: the simulator, or Stripe (PAYMENT_PROVIDER=stripe).
    PaymentSimulatorModule,
    AdminModule,
    HealthModule,
    OrdersModule,
    CaptureVoidModule,
    AsyncPaymentsModule,
    PrivacyModule,
    RefundsModule,
    CancelByKeyModule,
    WebhooksModule,
    StripeWebhooksModule,
    ReconciliationModule,
    WebhookEndpointsModule,
  ],
})
export class AppModule {}
