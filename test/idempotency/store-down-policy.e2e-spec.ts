// @Idempotent({ onStoreDown }) (issue 16): what a keyed route does when
// MongoDB, its store of record, cannot be reached. orders.create is 'closed'
// (503 + Retry-After, nothing runs): the only sane choice for payments. An
// 'open' route runs its work without the guard - for writes that are
// naturally idempotent. No production route is 'open', so a test-only module
// declares one next to a 'closed' twin.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Body, Controller, Module, Param, Put, Res } from '@nestjs/common';
import { IsString, MaxLength } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { Tenant } from '../../src/auth/tenant.js';
import { resolveMongoBackend, type MongoBackend } from '../../src/database/embedded-mongo.js';
import {
  IdempotencyAttempts,
  IdempotencyKey,
  type IdempotencyKeyContext,
  IdempotencyService,
  Idempotent,
  type IdempotentResponse,
  type IdempotentWork,
  sendIdempotentResult,
  TransactionRunner,
} from '@idempotent-orders/nest-idempotency';
import { auth, orderBody, startApp, type TestApp } from '../support/test-app.js';

class SettingBody {
  @IsString()
  @MaxLength(100)
  value!: string;
}

/** The routes' own store: setting a name to a value twice leaves what setting it once leaves. */
const settings = new Map<string, string>();

@Controller({ path: 'test-settings', version: '1' })
class SettingsController {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly attempts: IdempotencyAttempts,
    private readonly transactions: TransactionRunner,
  ) {}

  @Put('open/:name')
  @Idempotent({ operation: 'test.settings-open', onStoreDown: 'open' })
  async putOpen(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('name') name: string,
    @Body() body: SettingBody,
    @Res() reply: FastifyReply,
  ) {
    await this.put(tenant, key, name, body, reply);
  }

  @Put('closed/:name')
  @Idempotent({ operation: 'test.settings-closed' })
  async putClosed(
    @Tenant() tenant: string,
    @IdempotencyKey() key: IdempotencyKeyContext,
    @Param('name') name: string,
    @Body() body: SettingBody,
    @Res() reply: FastifyReply,
  ) {
    await this.put(tenant, key, name, body, reply);
  }

  /** The two routes differ only in their declared policy. */
  private async put(tenant: string, key: IdempotencyKeyContext, name: string, body: SettingBody, reply: FastifyReply): Promise<void> {
    const request = this.idempotency.requestFor(key, tenant, { name, ...body });
    sendIdempotentResult(reply, await this.idempotency.execute(request, this.work(name, body)));
  }

  private work(name: string, body: SettingBody): IdempotentWork {
    const apply = (): IdempotentResponse => {
      settings.set(name, body.value);
      return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, value: body.value }) };
    };
    return {
      begin: async () => undefined,
      resume: async (lease) => {
        const response = apply();
        await this.transactions.run((session) => this.attempts.complete(session, lease, 'done', response));
        return response;
      },
      withoutGuard: async () => apply(),
    };
  }
}

// IdempotencyModule is global (AppModule registers it once): a feature module only declares its routes.
@Module({ controllers: [SettingsController] })
class SettingsTestModule {}

describe('onStoreDown: closed (default, orders.create) and open, with MongoDB unreachable', () => {
  let backend: MongoBackend;
  let t: TestApp;

  beforeAll(async () => {
    backend = await resolveMongoBackend({ PATH: process.env.PATH, MONGOMS_SYSTEM_BINARY: process.env.MONGOMS_SYSTEM_BINARY });
    t = await startApp({
      dbName: 'test_store_down_policy',
      env: { MONGODB_URI: backend.uri, MONGODB_SERVER_SELECTION_TIMEOUT_MS: '1000' },
      imports: [SettingsTestModule],
    });
  });
  beforeEach(() => settings.clear());
  afterAll(async () => {
    await t.close().catch(() => undefined);
    await backend.stop();
  });

  const put = (policy: 'open' | 'closed', name: string, key: string, value: string) =>
    t.http().put(`/v1/test-settings/${policy}/${name}`).set(auth()).set('Idempotency-Key', key).send({ value });
  const outcomes = async () => (await t.http().get('/metrics').expect(200)).text;

  it('with the store up, both routes are guarded alike: run once, then replayed', async () => {
    for (const policy of ['open', 'closed'] as const) {
      const first = await put(policy, `colour-${policy}`, `k-up-${policy}`, 'blue').expect(200);
      const again = await put(policy, `colour-${policy}`, `k-up-${policy}`, 'blue').expect(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      await put(policy, `colour-${policy}`, `k-up-${policy}`, 'red').expect(422);
    }
    expect(await t.db.collection('idempotency_records').countDocuments({ status: 'complete' })).toBe(2);
    expect([...settings.values()]).toEqual(['blue', 'blue']);
  });

  it('with the store down: closed answers 503 + Retry-After and runs nothing; open runs the write unguarded; orders.create is closed', async () => {
    await backend.stop();

    const closed = await put('closed', 'size', 'k-down-closed', 'L');
    expect(closed.status).toBe(503);
    expect(closed.body.code).toBe('store_unavailable');
    expect(Number(closed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(settings.has('size')).toBe(false);

    const open = await put('open', 'size', 'k-down-open', 'L');
    expect(open.status).toBe(200);
    expect(open.body).toEqual({ name: 'size', value: 'L' });
    expect(open.headers['idempotent-replayed']).toBeUndefined();
    expect(settings.get('size')).toBe('L');
    // Nothing was recorded, so a retry runs again - harmless for this write, which is why the route chose 'open'.
    await put('open', 'size', 'k-down-open', 'L').expect(200);
    expect(settings.get('size')).toBe('L');
    expect(await outcomes()).toMatch(/idempotency_requests_total\{operation="test.settings-open",outcome="unguarded_store_down"\} 2/);

    const order = await t.http().post('/v1/orders').set(auth()).set('Idempotency-Key', 'k-down-order').send(orderBody());
    expect(order.status).toBe(503);
    expect(order.body.code).toBe('store_unavailable');
  }, 30_000);
});
