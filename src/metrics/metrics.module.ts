import { Global, Module } from '@nestjs/common';
import { MetricsListener } from './metrics-listener.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsService } from './metrics.service.js';

@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, MetricsListener],
  exports: [MetricsService],
})
export class MetricsModule {}
