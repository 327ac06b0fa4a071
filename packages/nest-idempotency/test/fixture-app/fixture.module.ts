import { BadRequestException, Body, Controller, Headers, Module, Param, Post, Put, Res } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import {
  IdempotencyAttempts,
  IdempotencyKey,
  IdempotencyProblemFilter,
  IdempotencyService,
  Idempotent,
  sendIdempotentResult,
  TransactionRunner,
  type IdempotencyKeyContext,
  type IdempotentResponse,
  type IdempotentWork,
  type IdempotentHttpResponse,
} from '../../src/index.js';

/**
 * A consumer that is not orders, written as a team would write theirs:
 * POST /widgets creates a widget (money-like: `onStoreDown` closed), PUT
 * /settings/:name sets a whole value (naturally idempotent: open). The
 * tenant comes from a header (the options' resolver); the package's filter
 * answers its errors.
 */
export const gate = {
  /** While set, a widget's creation waits for it after the claim (a request in flight). */
  hold: null as Promise<void> | null,
};

interface WidgetBody {
  size: string;
}

@Controller('widgets')
class WidgetsController {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  @Post()
  @Idempotent({ operation: 'widgets.create' })
  async create(
    @Headers('x-tenant') tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() body: WidgetBody,
    @Res() reply: IdempotentHttpResponse,
  ): Promise<void> {
    if (typeof body?.size !== 'string' || !['S', 'M', 'L'].includes(body.size)) throw new BadRequestException('size must be S, M or L');
    const request = this.idempotency.requestFor(key, tenant, body);
    sendIdempotentResult(reply, await this.idempotency.execute(request, this.work(tenant, body)));
  }

  /** The same creation with the duplicate guard opted in (`widgets.create-guarded`): a body under a new key in the window is refused. */
  @Post('guarded')
  @Idempotent({ operation: 'widgets.create-guarded', duplicateGuard: true })
  async createGuarded(
    @Headers('x-tenant') tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Body() body: WidgetBody,
    @Res() reply: IdempotentHttpResponse,
  ): Promise<void> {
    return this.create(tenant, key, body, reply);
  }

  /**
   * A keyed action on one widget: its id is only in the path. The key is bound
   * to the resource (the route's parameters are in the fingerprint), so the
   * same key and body on another widget is 422, never this widget's answer.
   */
  @Post(':id/ship')
  @Idempotent({ operation: 'widgets.ship' })
  async ship(
    @Headers('x-tenant') tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('id') id: string,
    @Body() body: { carrier?: string },
    @Res() reply: IdempotentHttpResponse,
  ): Promise<void> {
    const shipments = this.connection.collection('shipments');
    const work: IdempotentWork = {
      begin: async (session, lease) => {
        await shipments.insertOne(
          { _id: `shp_${lease.claimId}` as never, tenant, widget: id, carrier: body?.carrier ?? null },
          { session },
        );
      },
      resume: (lease) =>
        this.transactions.run(async (session) => {
          const response: IdempotentResponse = {
            status: 200,
            headers: { 'content-type': 'application/json; charset=utf-8' },
            body: JSON.stringify({ widget: id, shipment: `shp_${lease.claimId}` }),
          };
          await this.attempts.complete(session, lease, 'shipped', response);
          return response;
        }),
    };
    sendIdempotentResult(reply, await this.idempotency.execute(this.idempotency.requestFor(key, tenant, body ?? {}), work));
  }

  private work(tenant: string, body: WidgetBody): IdempotentWork {
    const widgets = this.connection.collection('widgets');
    return {
      // Inside the claim's transaction: the record and the widget commit together.
      begin: async (session, lease) => {
        await widgets.insertOne({ _id: `wgt_${lease.claimId}` as never, tenant, size: body.size }, { session });
      },
      resume: async (lease) => {
        if (gate.hold) await gate.hold;
        return this.transactions.run(async (session) => {
          const response: IdempotentResponse = {
            status: 201,
            headers: { 'content-type': 'application/json; charset=utf-8', location: `/widgets/wgt_${lease.claimId}` },
            body: JSON.stringify({ id: `wgt_${lease.claimId}`, size: body.size }),
          };
          await this.attempts.complete(session, lease, 'created', response);
          return response;
        });
      },
    };
  }
}

@Controller('settings')
class SettingsController {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
    @InjectConnection() private readonly connection: Connection,
  ) {}

  @Put(':name')
  @Idempotent({ operation: 'settings.put', onStoreDown: 'open' })
  async put(
    @Headers('x-tenant') tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('name') name: string,
    @Body() body: { value: string },
    @Res() reply: IdempotentHttpResponse,
  ): Promise<void> {
    if (typeof body?.value !== 'string') throw new BadRequestException('value must be a string');
    const request = this.idempotency.requestFor(key, tenant, { name, ...body });
    const settings = this.connection.collection<{ _id: string; value: string }>('settings');
    const answer = (): IdempotentResponse => ({
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ name, value: body.value }),
    });
    const work: IdempotentWork = {
      begin: async (session) => {
        await settings.updateOne({ _id: `${tenant}:${name}` }, { $set: { value: body.value } }, { session, upsert: true });
      },
      resume: (lease) =>
        this.transactions.run(async (session) => {
          const response = answer();
          await this.attempts.complete(session, lease, 'set', response);
          return response;
        }),
      // The store of records is unreachable: so is this one here, but a team's setting may live elsewhere.
      withoutGuard: () => Promise.resolve(answer()),
    };
    sendIdempotentResult(reply, await this.idempotency.execute(request, work));
  }
}

@Module({
  controllers: [WidgetsController, SettingsController],
  providers: [{ provide: APP_FILTER, useClass: IdempotencyProblemFilter }],
})
export class FixtureModule {}
