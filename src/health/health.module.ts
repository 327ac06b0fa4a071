import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { OutboxModule } from '../outbox/outbox.module.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'pretty', logger: false }), OutboxModule],
  controllers: [HealthController],
})
export class HealthModule {}
