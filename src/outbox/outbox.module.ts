import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { natsConfig, type NatsConfig } from '../config/config.tokens.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { EventPublisher, LogEventPublisher } from './event-publisher.port.js';
import { EventSubscriber } from './event-subscriber.port.js';
import { JetStreamBroker } from './jetstream.broker.js';
import { JetStreamEventPublisher } from './jetstream.publisher.js';
import { JetStreamEventSubscriber } from './jetstream.subscriber.js';
import { OutboxEventRepository } from './outbox-event.repository.js';
import { OutboxRelay } from './outbox.relay.js';
import { OutboxService } from './outbox.service.js';
import { OutboxEventSchema, OUTBOX_EVENT_MODEL } from './schemas/outbox-event.schema.js';
import { OutboxSequenceSchema, OUTBOX_SEQUENCE_MODEL } from './schemas/outbox-sequence.schema.js';

@Module({
  imports: [
    MongooseModule.forFeature([
      { name: OUTBOX_EVENT_MODEL, schema: OutboxEventSchema },
      { name: OUTBOX_SEQUENCE_MODEL, schema: OutboxSequenceSchema },
    ]),
  ],
  providers: [
    OutboxEventRepository,
    OutboxService,
    OutboxRelay,
    JetStreamBroker,
    // NATS_URL set: both ends of the stream are JetStream. Unset: the in-process bus is both ends.
    {
      provide: EventPublisher,
      inject: [natsConfig.KEY, JetStreamBroker, MetricsService],
      useFactory: (nats: NatsConfig, broker: JetStreamBroker, metrics: MetricsService) =>
        nats.url ? new JetStreamEventPublisher(broker, metrics) : new LogEventPublisher(),
    },
    {
      provide: EventSubscriber,
      inject: [natsConfig.KEY, JetStreamBroker, MetricsService, EventPublisher],
      useFactory: (nats: NatsConfig, broker: JetStreamBroker, metrics: MetricsService, publisher: EventPublisher) =>
        nats.url ? new JetStreamEventSubscriber(broker, metrics) : (publisher as LogEventPublisher),
    },
  ],
  exports: [OutboxService, OutboxRelay, EventPublisher, EventSubscriber, JetStreamBroker],
})
export class OutboxModule {}
