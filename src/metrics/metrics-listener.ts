import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { metricsConfig, type MetricsConfig } from '../config/config.tokens.js';
import { metricsTokenAccepted } from './metrics-access.js';
import { MetricsService } from './metrics.service.js';

/**
 * The metrics listener (METRICS_PORT): GET /metrics and nothing else, on a
 * port meant for the scraper's network only, never published with the API.
 * Plain node:http: it needs none of the API's pipeline, and a flood on the
 * API port does not queue scrapes behind it.
 */
@Injectable()
export class MetricsListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private server?: Server;
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: MetricsService,
    @Inject(metricsConfig.KEY) private readonly config: MetricsConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.listener !== 'port') return;
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      const answer = (status: number, body: string, type = 'text/plain; charset=utf-8') =>
        response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
      if (request.method !== 'GET' || path !== '/metrics') return answer(404, 'not found\n');
      if (!metricsTokenAccepted(this.config.token, request.headers.authorization)) return answer(401, 'unauthorized\n');
      this.metrics.registry.metrics().then(
        (text) => answer(200, text, 'text/plain; version=0.0.4; charset=utf-8'),
        () => answer(500, 'metrics unavailable\n'),
      );
    });
    server.headersTimeout = 5_000;
    server.requestTimeout = 10_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.config.port, this.config.host, () => resolve());
    });
    this.server = server;
    const { address, port } = server.address() as AddressInfo;
    this.logger.log(`Metrics on http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics (not the API port)`);
  }

  /** The port actually bound (METRICS_PORT), for tests. */
  boundPort(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
