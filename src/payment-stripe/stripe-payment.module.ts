import { Module } from '@nestjs/common';
import { getConnectionToken } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import type Stripe from 'stripe';
import { Clock } from '../common/clock.js';
import { createStripeClient } from './stripe-client.js';
import { StripePaymentGateway } from './stripe-payment.gateway.js';
import { StripeProviderStatement } from './stripe-provider-statement.js';
import { StripeRequestJournal, type JournalEntry } from './stripe-request.journal.js';
import { parseStripeSettings, type StripeSettings } from './stripe.settings.js';
import { STRIPE_CLIENT, STRIPE_SETTINGS } from './stripe.tokens.js';

/**
 * The Stripe adapter (PAYMENT_PROVIDER=stripe): the gateway, the statement,
 * the SDK client and the adapter's request journal
 * (collection `stripe_requests`). Settings are parsed at boot and fail
 * closed (stripe.settings.ts).
 */
@Module({
  providers: [
    { provide: STRIPE_SETTINGS, useFactory: (): StripeSettings => parseStripeSettings(process.env, process.env.NODE_ENV === 'production') },
    { provide: STRIPE_CLIENT, inject: [STRIPE_SETTINGS], useFactory: (settings: StripeSettings) => createStripeClient(settings) },
    {
      provide: StripeRequestJournal,
      inject: [getConnectionToken()],
      useFactory: (connection: Connection) =>
        new StripeRequestJournal(connection.getClient().db(connection.name).collection<JournalEntry>('stripe_requests')),
    },
    {
      provide: StripePaymentGateway,
      inject: [STRIPE_CLIENT, StripeRequestJournal, Clock, STRIPE_SETTINGS],
      useFactory: (stripe: Stripe, journal: StripeRequestJournal, clock: Clock, settings: StripeSettings) =>
        new StripePaymentGateway(stripe, journal, clock, settings),
    },
    { provide: StripeProviderStatement, inject: [STRIPE_CLIENT], useFactory: (stripe: Stripe) => new StripeProviderStatement(stripe) },
  ],
  exports: [StripePaymentGateway, StripeProviderStatement, STRIPE_CLIENT, STRIPE_SETTINGS],
})
export class StripePaymentModule {}
