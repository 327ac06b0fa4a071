import type { WebhookDelivery, WebhookEndpoint } from './webhook-endpoint.js';

export function endpointView(endpoint: WebhookEndpoint) {
  return {
    id: endpoint._id,
    url: endpoint.url,
    events: endpoint.events,
    description: endpoint.description,
    status: endpoint.status,
    disabledReason: endpoint.disabledReason,
    disabledAt: endpoint.disabledAt?.toISOString() ?? null,
    createdAt: endpoint.createdAt.toISOString(),
  };
}

export function deliveryView(delivery: WebhookDelivery) {
  return {
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    status: delivery.status,
    attempts: delivery.attempts.map((attempt) => ({
      at: attempt.at.toISOString(),
      httpStatus: attempt.httpStatus,
      durationMs: attempt.durationMs,
      error: attempt.error,
    })),
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
  };
}
