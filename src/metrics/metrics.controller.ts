import { Controller, Get, Header, Inject, NotFoundException, Req, VERSION_NEUTRAL } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { UnauthorizedError } from '../auth/auth.errors.js';
import { Public } from '../auth/public.decorator.js';
import { metricsConfig, type MetricsConfig } from '../config/config.tokens.js';
import { metricsTokenAccepted } from './metrics-access.js';
import { MetricsService } from './metrics.service.js';

/**
 * /metrics on the API port: only where METRICS_PORT is not used (see
 * MetricsSettings), and behind METRICS_TOKEN when one is set. Payment volume,
 * erasure counts and the Node version are not for anyone on the API's network.
 */
@ApiExcludeController()
@Public()
@Controller({ path: 'metrics', version: VERSION_NEUTRAL })
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    @Inject(metricsConfig.KEY) private readonly config: MetricsConfig,
  ) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  scrape(@Req() request: FastifyRequest): Promise<string> {
    if (this.config.listener !== 'api') throw new NotFoundException();
    if (!metricsTokenAccepted(this.config.token, request.headers.authorization)) throw new UnauthorizedError();
    return this.metrics.registry.metrics();
  }
}
