import { Module } from '@nestjs/common';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import type Stripe from 'stripe';
import { Clock } from '../common/clock.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { createStripeClient } from './stripe-client.js';
import { StripePaymentGateway } from './stripe-payment.gateway.js';
import { StripeProviderStatement } from './stripe-provider-statement.js';
import { journalRetentionSeconds, StripeRequestJournal, type JournalEntry } from './stripe-request.journal.js';
import { idempotencyConfig, type IdempotencyConfig } from '../config/config.tokens.js';
import { stripeConfig, type StripeConfig } from '../config/stripe.config.js';
import type { StripeSettings } from './stripe.settings.js';
import { STRIPE_CLIENT, STRIPE_SETTINGS } from './stripe.tokens.js';

/**
 * The Stripe adapter (PAYMENT_PROVIDER=stripe): the gateway, the statement,
 * the SDK client and the adapter's request journal
 * (collection `stripe_requests`). Settings are parsed at boot and fail
 * closed (stripe.settings.ts).
 */
@Module({
  providers: [
    // Null unless PAYMENT_PROVIDER=stripe (config/stripe.config.ts): the simulator's deployments need no Stripe secret, and get no client.
    { provide: STRIPE_SETTINGS, inject: [stripeConfig.KEY], useFactory: (config: StripeConfig): StripeSettings | null => config.stripe },
    {
      provide: STRIPE_CLIENT,
      inject: [STRIPE_SETTINGS],
      useFactory: (settings: StripeSettings | null) => (settings ? createStripeClient(settings) : null),
    },
    {
      provide: StripeRequestJournal,
      inject: [getConnectionToken(), STRIPE_SETTINGS, idempotencyConfig.KEY],
      useFactory: async (connection: Connection, settings: StripeSettings | null, idempotency: IdempotencyConfig) => {
        const journal = new StripeRequestJournal(connection.getClient().db(connection.name).collection<JournalEntry>('stripe_requests'));
        // Its retention follows the idempotency settings (journalRetentionSeconds); only where Stripe is the provider.
        if (settings) await journal.ensureRetention(journalRetentionSeconds(idempotency));
        return journal;
      },
    },
    {
      provide: StripePaymentGateway,
      inject: [STRIPE_CLIENT, StripeRequestJournal, Clock, STRIPE_SETTINGS, MetricsService],
      useFactory: (
        stripe: Stripe | null,
        journal: StripeRequestJournal,
        clock: Clock,
        settings: StripeSettings | null,
        metrics: MetricsService,
      ) => (stripe && settings ? new StripePaymentGateway(stripe, journal, clock, settings, metrics.stripe) : null),
    },
    {
      provide: StripeProviderStatement,
      inject: [STRIPE_CLIENT],
      useFactory: (stripe: Stripe | null) => (stripe ? new StripeProviderStatement(stripe) : null),
    },
  ],
  exports: [StripePaymentGateway, StripeProviderStatement, STRIPE_CLIENT, STRIPE_SETTINGS],
})
export class StripePaymentModule {}
