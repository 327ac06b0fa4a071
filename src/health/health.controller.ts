import { Controller, Get, Inject, Logger, VERSION_NEUTRAL } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { Connection } from 'mongoose';
import { Public } from '../auth/public.decorator.js';
import { ApiProblemResponse } from '../common/api-problem.decorator.js';
import { mongoConfig, type MongoConfig } from '../config/config.tokens.js';
import { DatabaseBootstrap } from '../database/database.bootstrap.js';
import { JetStreamBroker } from '../outbox/jetstream.broker.js';
import { LivenessResponse, ReadinessResponse } from './dto/health.response.js';

/*
 * Terminus documents its checks itself only where it can require() the
 * ESM-only @nestjs/swagger (Node 22.12+, not 20), and describes a 503 body
 * our problem filter never sends; so it is off and the answers are ours.
 */
const HEALTH_CHECK = { noCache: true, swaggerDocumentation: false };

@ApiTags('health')
@Public()
@Controller({ path: 'health', version: VERSION_NEUTRAL })
export class HealthController {
  private readonly logger = new Logger('Health');
  private ping?: ReturnType<HealthController['mongoPrimary']>;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: HealthIndicatorService,
    private readonly bootstrap: DatabaseBootstrap,
    @InjectConnection() private readonly connection: Connection,
    @Inject(mongoConfig.KEY) private readonly mongo: MongoConfig,
    private readonly broker: JetStreamBroker,
  ) {}

  /** The process is up and serving; says nothing about dependencies (restart only if this fails). */
  @Get('live')
  @HealthCheck(HEALTH_CHECK)
  @ApiOkResponse({ type: LivenessResponse, description: 'The process is up' })
  live() {
    return this.health.check([() => this.indicator.check('process').up({ uptimeSeconds: Math.round(process.uptime()) })]);
  }

  /**
   * Ready for traffic: MongoDB reachable with a writable primary, and every
   * index built. Public, so it says up or down per check and nothing else (no
   * replica set name, no reason: those go to the log). Concurrent probes share
   * one ping, so a flood of them costs the store one `hello` at a time.
   */
  @Get('ready')
  @HealthCheck(HEALTH_CHECK)
  @ApiOkResponse({ type: ReadinessResponse, description: 'Ready for traffic' })
  @ApiProblemResponse(503, '`not_ready`: `details` says which check is down')
  ready() {
    return this.health.check([() => this.sharedPing(), () => this.indexes(), () => this.events()]);
  }

  private sharedPing() {
    this.ping ??= this.mongoPrimary().finally(() => {
      this.ping = undefined;
    });
    return this.ping;
  }

  /**
   * Answers within MONGODB_PING_TIMEOUT_MS whatever the store does: a frozen
   * server accepts the connection and never replies, and the probe must say
   * "down" before the load balancer's own probe timeout, not hang with it.
   */
  private async mongoPrimary() {
    const check = this.indicator.check('mongodb');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.mongo.pingTimeoutMs);
    });
    const down = (reason: string) => {
      this.logger.warn(`Not ready: MongoDB ${reason}`);
      return check.down();
    };
    try {
      const hello = await Promise.race([this.connection.db!.admin().command({ hello: 1 }), timedOut]);
      if (hello === 'timeout') return down(`gave no answer within ${this.mongo.pingTimeoutMs} ms`);
      if (!hello.isWritablePrimary) return down('has no writable primary');
      return check.up();
    } catch {
      return down('is unreachable');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Up even while the broker is down: the outbox is the buffer, so taking traffic away would only add an outage. */
  private events() {
    const check = this.indicator.check('events');
    if (!this.broker.enabled) return check.up({ transport: 'in-process', degraded: false });
    return check.up({ transport: 'jetstream', degraded: this.broker.state !== 'connected' });
  }

  private indexes() {
    const check = this.indicator.check('indexes');
    return this.bootstrap.indexesReady ? check.up() : check.down();
  }
}
