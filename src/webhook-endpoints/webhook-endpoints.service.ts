import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { ClientSession } from 'mongoose';
import {
  type IdempotencyKeyContext,
  IdempotencyService,
  type IdempotentResponse,
  type IdempotentResult,
  RefusedBeforeWorkError,
  SingleTransactionWorks,
  SubjectDigests,
} from '@idempotent-orders/nest-idempotency';
import { Clock } from '../common/clock.js';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { decodeCursor, type PagePosition } from '../common/page-cursor.js';
import type { CreateWebhookEndpointDto } from './dto/create-webhook-endpoint.dto.js';
import type { UpdateWebhookEndpointDto } from './dto/update-webhook-endpoint.dto.js';
import { EndpointSecrets, newSecret } from './endpoint-secrets.js';
import { EndpointUrlPolicy } from './endpoint-url.policy.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { deliveryId, ENDPOINT_ID_PATTERN, type WebhookDelivery, type WebhookEndpoint } from './webhook-endpoint.js';
import { WebhookEndpointRepository } from './webhook-endpoint.repository.js';
import { endpointView } from './webhook-endpoint.view.js';
import { WebhookDeliveryNotFoundError, WebhookEndpointLimitError, WebhookEndpointNotFoundError } from './webhook-endpoints.errors.js';
import { DeliveryWorkflow } from './delivery-workflow.js';
import { WebhookSubjectRepository } from './webhook-subject.repository.js';

export const CREATE_ENDPOINT_OPERATION = 'webhook_endpoints.create';
export const ROTATE_SECRET_OPERATION = 'webhook_endpoints.rotate_secret';
export const RETRY_DELIVERY_OPERATION = 'webhook_endpoints.retry_delivery';
export const KEYED_OPERATIONS = [CREATE_ENDPOINT_OPERATION, ROTATE_SECRET_OPERATION, RETRY_DELIVERY_OPERATION];

/** Both secrets sign for this long after a rotation, so receivers can switch without losing an event. */
const SECRET_OVERLAP_MS = 24 * 3600 * 1000;

/**
 * The endpoints API. The keyed POSTs are database writes only, so each is
 * one transaction with its idempotency record (the package's single
 * transaction work): a retried create makes one endpoint and answers with
 * the stored reply, secret included (stored responses are encrypted).
 */
@Injectable()
export class WebhookEndpointsService {
  private readonly logger = new Logger('WebhookEndpoints');

  constructor(
    @Inject(outgoingWebhooksConfig.KEY) private readonly config: OutgoingWebhooksConfig,
    private readonly endpoints: WebhookEndpointRepository,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly secrets: EndpointSecrets,
    private readonly urls: EndpointUrlPolicy,
    private readonly idempotency: IdempotencyService,
    private readonly single: SingleTransactionWorks,
    private readonly workflow: DeliveryWorkflow,
    private readonly subjects: WebhookSubjectRepository,
    private readonly digests: SubjectDigests,
    private readonly clock: Clock,
  ) {}

  /**
   * POST /v1/webhook-endpoints. A refused URL is 422 before the key is claimed (nothing stored). A tenant at its
   * endpoint cap is 409, found in the transaction (after a replay of a create that succeeded has been answered)
   * and withdrawn with the claim, so the same request and key succeed once an endpoint is deleted. The count is
   * exact under racing creates (countForCreate).
   */
  async create(tenant: string, dto: CreateWebhookEndpointDto, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    await this.urls.check(dto.url);
    const request = this.idempotency.requestFor(key, tenant, dto);
    return this.idempotency.execute(
      request,
      this.single.work(async (session) => {
        const now = this.clock.now();
        if ((await this.endpoints.countForCreate(session, tenant, now)) >= this.config.maxEndpointsPerTenant) {
          throw new RefusedBeforeWorkError(new WebhookEndpointLimitError(this.config.maxEndpointsPerTenant));
        }
        const id = `we_${randomBytes(12).toString('hex')}`;
        const secret = newSecret();
        const endpoint: WebhookEndpoint = {
          _id: id,
          tenant,
          url: dto.url,
          events: [...new Set(dto.events)],
          description: dto.description ?? null,
          status: 'enabled',
          disabledReason: null,
          disabledAt: null,
          failingSince: null,
          secrets: [{ sealed: this.secrets.seal(secret, id), createdAt: now, expiresAt: null }],
          createdAt: now,
          updatedAt: now,
        };
        await this.endpoints.insert(session, endpoint);
        return json(201, { ...endpointView(endpoint), secret }, `/v1/webhook-endpoints/${id}`);
      }),
    );
  }

  list(tenant: string): Promise<WebhookEndpoint[]> {
    return this.endpoints.listForTenant(tenant);
  }

  async get(tenant: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = ENDPOINT_ID_PATTERN.test(id) ? await this.endpoints.findForTenant(tenant, id) : null;
    if (!endpoint) throw new WebhookEndpointNotFoundError();
    return endpoint;
  }

  async update(tenant: string, id: string, dto: UpdateWebhookEndpointDto): Promise<WebhookEndpoint> {
    await this.get(tenant, id);
    if (dto.url !== undefined) await this.urls.check(dto.url);
    const events = dto.events ? [...new Set(dto.events)] : undefined;
    const updated = await this.endpoints.update(tenant, id, { url: dto.url, events, enabled: dto.enabled }, this.clock.now());
    if (!updated) throw new WebhookEndpointNotFoundError();
    return updated;
  }

  async remove(tenant: string, id: string): Promise<void> {
    if (!ENDPOINT_ID_PATTERN.test(id) || !(await this.endpoints.remove(tenant, id))) throw new WebhookEndpointNotFoundError();
  }

  /** POST .../rotate-secret: a new current secret; the previous one signs beside it for 24 hours. */
  async rotateSecret(tenant: string, id: string, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    await this.get(tenant, id);
    return this.idempotency.execute(
      this.idempotency.requestFor(key, tenant, {}),
      this.single.work(async (session) => {
        const endpoint = await this.endpoints.findForTenant(tenant, id, session);
        if (!endpoint) throw new WebhookEndpointNotFoundError();
        const now = this.clock.now();
        const secret = newSecret();
        const overlapUntil = new Date(now.getTime() + SECRET_OVERLAP_MS);
        await this.endpoints.rotate(
          session,
          endpoint,
          { sealed: this.secrets.seal(secret, id), createdAt: now, expiresAt: null },
          overlapUntil,
        );
        return json(200, { id, secret, previousSecretExpiresAt: overlapUntil.toISOString() });
      }),
    );
  }

  /** GET .../deliveries: one page, newest first; a cursor names a delivery of this endpoint or is refused. */
  async deliveriesOf(
    tenant: string,
    id: string,
    limit: number,
    cursor?: string,
  ): Promise<{ items: WebhookDelivery[]; next: PagePosition | null }> {
    await this.get(tenant, id);
    const after = cursor ? decodeCursor(cursor, (deliveryKey) => deliveryKey.endsWith(`:${id}`)) : null;
    return this.deliveries.listForEndpoint(tenant, id, limit, after);
  }

  /** POST .../deliveries/:eventId/retry: the delivery is due now, its schedule from the start, with the same `webhook-id`. */
  async retryDelivery(tenant: string, id: string, eventId: string, key: IdempotencyKeyContext): Promise<IdempotentResult> {
    await this.get(tenant, id);
    if (!(await this.deliveries.findForTenant(tenant, deliveryId(eventId, id)))) throw new WebhookDeliveryNotFoundError();
    const result = await this.idempotency.execute(
      this.idempotency.requestFor(key, tenant, {}),
      this.single.work(async (session: ClientSession) => {
        const delivery = await this.deliveries.findForTenant(tenant, deliveryId(eventId, id), session);
        if (!delivery) throw new WebhookDeliveryNotFoundError();
        await this.deliveries.retry(session, delivery._id, this.clock.now());
        return json(202, { eventId, status: 'pending' });
      }),
    );
    if (!result.replayed) this.workflow.kick();
    return result;
  }

  /**
   * After a rotation of IDEMPOTENCY_ENCRYPTION_KEY: every endpoint secret sealed under a retired key is sealed
   * again under the current one (at boot, by every instance; the write is conditional, so they do not fight).
   * Endpoint secrets never expire as stored responses do, so without this the retired key could never be
   * dropped: each delivery of those endpoints would fail to open its secret. A secret that no configured key
   * opens any more is left as it is and logged; deliveries record `secret_unavailable` until it is rotated.
   */
  async resealSecrets(): Promise<{ resealed: number; unreadable: number }> {
    let resealed = 0;
    let unreadable = 0;
    const now = this.clock.now();
    for (const endpoint of await this.endpoints.sealedUnderOtherKeys(this.secrets.currentKeyId)) {
      try {
        const secrets = endpoint.secrets
          .filter((secret) => secret.expiresAt === null || secret.expiresAt > now) // a rotated-out secret past its overlap signs nothing
          .map((secret) => ({ ...secret, sealed: this.secrets.reseal(secret.sealed, endpoint._id) }));
        if (await this.endpoints.replaceSecrets(endpoint, secrets)) resealed++;
      } catch (error) {
        unreadable++;
        this.logger.error({
          msg: 'webhook endpoint secret not resealed: no configured key opens it',
          endpointId: endpoint._id,
          error: String(error),
        });
      }
    }
    if (resealed > 0) this.logger.log(`Sealed ${resealed} webhook endpoint secret set(s) under the current encryption key`);
    return { resealed, unreadable };
  }

  /**
   * In the erasure's transaction: recorded deliveries carry the pseudonym from now on (returns how many changed),
   * and the subject's mark tells the dispatcher to pseudonymize the customer's earlier events it reads later.
   */
  async eraseCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    const now = this.clock.now();
    const subject = this.digests.of(tenant, customerId);
    await this.subjects.markErased(session, subject, now);
    return this.deliveries.pseudonymizeCustomer(session, tenant, subject, customerId, pseudonym, now);
  }
}

function json(status: number, body: object, location?: string): IdempotentResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (location) headers.location = location;
  return { status, headers, body: JSON.stringify(body) };
}
