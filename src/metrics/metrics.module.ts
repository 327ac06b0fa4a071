import { Global, Module } from '@nestjs/common';
import { MetricsListener } from './metrics-listener.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsService } from './metrics.service.js';

/** The idempotency package's metrics port, as this app provides it (IdempotencyModule's `ports.metrics`). */
export const IDEMPOTENCY_METRICS = Symbol('IDEMPOTENCY_METRICS');

@Global()
@Module({
  controllers: [MetricsController],
  providers: [
    MetricsService,
    MetricsListener,
    { provide: IDEMPOTENCY_METRICS, inject: [MetricsService], useFactory: (metrics: MetricsService) => metrics.idempotency },
  ],
  exports: [MetricsService, IDEMPOTENCY_METRICS],
})
export class MetricsModule {}
