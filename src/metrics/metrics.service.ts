import { Injectable } from '@nestjs/common';
import { PrometheusIdempotencyMetrics } from '@idempotent-orders/nest-idempotency/prometheus';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric the service exports, on a registry of its own (several apps
 * can live in one test process). Names are referenced by ops/alerts.rules.yml;
 * a unit test keeps the two in step.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  /** The idempotency package's metrics, on this registry, under the names ops/alerts.rules.yml uses. */
  readonly idempotency = new PrometheusIdempotencyMetrics(this.registry);

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['route', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly httpClientErrors = new Counter({
    name: 'http_client_errors_total',
    help: 'Connections refused by the HTTP parser before a request existed, by reason (timeout, headers_too_large, malformed, reset)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly unhandledRejections = new Counter({
    name: 'process_unhandled_rejections_total',
    help: 'Promise rejections nobody handled, by error class: logged with their stack by the process guard instead of killing the process; each is a bug to fix at its source',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly adoptedDocuments = new Counter({
    name: 'workflow_adopted_documents_total',
    help: 'Documents found already written exactly as an attempt would write them (half-applied earlier attempt) and adopted',
    labelNames: ['what'] as const,
    registers: [this.registry],
  });

  readonly serverClockOffset = new Gauge({
    name: 'server_clock_offset_seconds',
    help: "MongoDB primary's clock minus this host's clock at the last reading; leases and expiry use the primary's",
    registers: [this.registry],
  });

  readonly outboxBacklog = new Gauge({
    name: 'outbox_backlog',
    help: 'Outbox events not yet published (set by the relay)',
    registers: [this.registry],
  });

  readonly outboxPublished = new Counter({
    name: 'outbox_published_total',
    help: 'Outbox events published',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly outboxPublishFailures = new Counter({
    name: 'outbox_publish_failures_total',
    help: 'Outbox publish attempts that failed',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  // --- Events on the broker (issue 45): the outbox's age, the publish, the broker and its consumers ---
  readonly outboxOldestPendingAge = new Gauge({
    name: 'outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest unpublished outbox event (0 when none; set by the relay each pass)',
    registers: [this.registry],
  });

  readonly outboxPublishDuration = new Histogram({
    name: 'outbox_publish_duration_seconds',
    help: 'One event publish until the broker acknowledged it (or failed)',
    labelNames: ['outcome'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly eventsBrokerConnected = new Gauge({
    name: 'events_broker_connected',
    help: '1 while the NATS connection is up, 0 while it is down (absent without NATS_URL)',
    registers: [this.registry],
  });

  readonly jetstreamErrors = new Counter({
    name: 'jetstream_errors_total',
    help: 'JetStream failures by code: the API error code, or timeout, no_responders, disconnected, other',
    labelNames: ['operation', 'code'] as const,
    registers: [this.registry],
  });

  readonly eventsConsumerPending = new Gauge({
    name: 'events_consumer_pending',
    help: "Messages the durable consumer has not yet been delivered (the broker's num_pending, read at each delivery and every 15 s)",
    labelNames: ['consumer'] as const,
    registers: [this.registry],
  });

  readonly eventsConsumerRedeliveries = new Counter({
    name: 'events_consumer_redeliveries_total',
    help: 'Messages delivered to a durable consumer again (after a nak or an ack timeout)',
    labelNames: ['consumer'] as const,
    registers: [this.registry],
  });
  readonly eventsHandlerFailures = new Counter({
    name: 'events_handler_failures_total',
    help: "Events a durable consumer's handler failed on, counted at each failure (each is delivered again after a backoff up to 30 s, never dropped)",
    labelNames: ['consumer'] as const,
    registers: [this.registry],
  });
  readonly eventsConsumerRecreated = new Counter({
    name: 'events_consumer_recreated_total',
    help: 'Durable consumers recreated after they were deleted while read (by an operator, or with their stream); a recreated consumer reads the stream from its start',
    labelNames: ['consumer'] as const,
    registers: [this.registry],
  });
  // --- end of events on the broker ---

  readonly rateLimited = new Counter({
    name: 'rate_limited_requests_total',
    help: 'Requests refused with 429, by limit (key or tenant)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly paymentCharges = new Counter({
    name: 'payment_charge_attempts_total',
    help: 'Calls to the payment provider by result (succeeded, declined, unavailable)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookEvents = new Counter({
    name: 'webhook_events_total',
    help: 'Provider webhook events received, by type (charge.* or other) and outcome (applied, ignored, unknown_type, duplicate)',
    labelNames: ['type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookRefused = new Counter({
    name: 'webhook_refused_total',
    help: 'Webhook deliveries refused before the inbox, by code (webhook_signature_invalid, webhook_timestamp_out_of_tolerance, ...)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly processingReconciled = new Counter({
    name: 'processing_orders_reconciled_total',
    help: 'Orders past the processing bound settled by asking the provider, by result (succeeded, failed, canceled, error)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly settlementMismatches = new Gauge({
    name: 'settlement_reconciliation_mismatches',
    help: 'Mismatches between the ledger clearing account and the provider in the last settlement reconciliation, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly settlementLastRun = new Gauge({
    name: 'settlement_reconciliation_last_run_timestamp_seconds',
    help: 'When the settlement reconciliation last completed (Unix seconds)',
    registers: [this.registry],
  });

  readonly paymentOperations = new Counter({
    name: 'payment_operations_total',
    help: 'Captures, voids and refunds answered by the payment provider, by kind and outcome (succeeded, refused, canceled)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly authorizationSweep = new Counter({
    name: 'authorization_expiry_sweep_total',
    help: 'Lapsed authorizations the expiry sweep handled, by outcome (voided, expired, skipped, lost, error)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  /** The Stripe adapter's calls (PAYMENT_PROVIDER=stripe), by SDK operation, outcome, and the port operation they serve (kind). */
  readonly stripeRequests = new Counter({
    name: 'stripe_requests_total',
    help: 'Calls to Stripe by operation (payment_intents.create, refunds.create, ...) and outcome (ok, declined, transient, idempotency_error, key_reconciled, invalid, error); idempotency_error means our key derivation is wrong (those reconciliation expects are key_reconciled); kind: what the call serves (charge, capture, void, refund, cancel: reconciliation canceling a key or an expired payment)',
    labelNames: ['operation', 'outcome', 'kind'] as const,
    registers: [this.registry],
  });

  readonly stripeDuration = new Histogram({
    name: 'stripe_request_duration_seconds',
    help: "Stripe's latency per call as the adapter saw it (the SDK's own retries included), by operation",
    labelNames: ['operation'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });

  /** The Stripe adapter's metrics port (payment-stripe/stripe-payment.gateway.ts StripeMetrics). */
  readonly stripe = {
    observe: (operation: string, outcome: string, seconds: number, kind: string): void => {
      this.stripeRequests.inc({ operation, outcome, kind });
      this.stripeDuration.observe({ operation }, seconds);
    },
  };

  // Outgoing webhooks (src/webhook-endpoints): the merchants' endpoints, ops/alerts.rules.yml group outgoing-webhooks.
  readonly outgoingWebhookDeliveries = new Counter({
    name: 'outgoing_webhook_deliveries_total',
    help: 'Deliveries of an event to a merchant endpoint that ended, by outcome (succeeded, failed after the last attempt)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly outgoingWebhookAttempts = new Counter({
    name: 'outgoing_webhook_attempts_total',
    help: 'HTTP attempts to merchant endpoints by result (success, http_error, timeout, connection_error, address_refused, endpoint_gone, secret_unavailable)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly outgoingWebhookDuration = new Histogram({
    name: 'outgoing_webhook_attempt_duration_seconds',
    help: 'Duration of one attempt to a merchant endpoint (connect to the end of the read, capped by the timeout)',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly outgoingWebhookEndpointsDisabled = new Counter({
    name: 'outgoing_webhook_endpoints_disabled_total',
    help: 'Endpoints disabled because every attempt to them failed for the configured time (5 days by default)',
    registers: [this.registry],
  });

  readonly outgoingWebhookPending = new Gauge({
    name: 'outgoing_webhook_deliveries_pending',
    help: 'Deliveries not yet succeeded or failed (the dispatcher lag: events recorded but not yet at their endpoints)',
    registers: [this.registry],
  });

  readonly outgoingWebhookOldestDue = new Gauge({
    name: 'outgoing_webhook_oldest_due_age_seconds',
    help: 'How long the most overdue pending delivery has been due (0: none overdue); grows when the workers cannot keep up',
    registers: [this.registry],
  });

  readonly outgoingWebhookRedeliveries = new Counter({
    name: 'outgoing_webhook_consumer_redeliveries_total',
    help: 'Events the stream delivered to the webhook dispatcher again (redelivered by the transport), and of those, duplicates its inbox dropped',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
