/** Events of a test's own, published through the service's publisher (no order behind them). */
import { randomUUID } from 'node:crypto';
import type { EventPublisher, PublishedEvent } from '../../src/outbox/event-publisher.port.js';

/** Publishes `count` `order.completed` events, one at a time; returns their ids in order. */
export async function publishTestEvents(publisher: EventPublisher, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const event: PublishedEvent = {
      id: `evt_${randomUUID()}`,
      type: 'order.completed',
      tenant: 'acme',
      aggregateId: `ord_${i}`,
      schemaVersion: 2,
      sequence: 1,
      payload: { id: `ord_${i}` },
      occurredAt: new Date().toISOString(),
    };
    await publisher.publish(event);
    ids.push(event.id);
  }
  return ids;
}
