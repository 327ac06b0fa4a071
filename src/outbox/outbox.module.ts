import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { EventPublisher, LogEventPublisher } from './event-publisher.port.js';
import { EventSubscriber } from './event-subscriber.port.js';
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
    { provide: EventPublisher, useClass: LogEventPublisher },
    // Without a broker the in-process bus is both ends of the stream.
    { provide: EventSubscriber, useExisting: EventPublisher },
  ],
  exports: [OutboxService, OutboxRelay, EventPublisher, EventSubscriber],
})
export class OutboxModule {}
