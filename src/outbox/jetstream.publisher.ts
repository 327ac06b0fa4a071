import { Injectable } from '@nestjs/common';
import { headers } from '@nats-io/transport-node';
import { MetricsService } from '../metrics/metrics.service.js';
import { toCloudEvent } from './cloud-event.js';
import { EventPublisher, type PublishedEvent } from './event-publisher.port.js';
import { JetStreamBroker, jetStreamErrorCode, noStreamAnswered } from './jetstream.broker.js';
import { subjectOf } from './jetstream-stream.js';

/** Structured mode: the whole CloudEvent is the body. */
export const CLOUDEVENTS_JSON = 'application/cloudevents+json';

/**
 * Publishes to the JetStream stream, one message per event, `Nats-Msg-Id` =
 * the event id, so the stream drops a repeat inside its duplicate window. A
 * publish counts once JetStream acknowledged it; an ack that says
 * "duplicate" counts too (the message is in the stream from an earlier try).
 */
@Injectable()
export class JetStreamEventPublisher extends EventPublisher {
  constructor(
    private readonly broker: JetStreamBroker,
    private readonly metrics: MetricsService,
  ) {
    super();
  }

  async publish(event: PublishedEvent): Promise<void> {
    try {
      const { js } = await this.broker.clients();
      const header = headers();
      header.set('Content-Type', CLOUDEVENTS_JSON);
      await js.publish(subjectOf(event.type), JSON.stringify(toCloudEvent(event)), { msgID: event.id, headers: header });
    } catch (error) {
      this.metrics.jetstreamErrors.inc({ operation: 'publish', code: jetStreamErrorCode(error) });
      if (noStreamAnswered(error)) this.broker.recheckStream();
      throw error;
    }
  }
}
