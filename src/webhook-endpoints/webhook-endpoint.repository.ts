import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { WEBHOOK_ENDPOINT_TENANT_MODEL, type WebhookEndpointTenant } from './schemas/webhook-endpoint-tenant.schema.js';
import { WEBHOOK_ENDPOINT_MODEL } from './schemas/webhook-endpoint.schema.js';
import { ALL_EVENTS, type EndpointSecret, type WebhookEndpoint } from './webhook-endpoint.js';

/** What PATCH may change. */
export interface EndpointChanges {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

/** webhook_endpoints. Every tenant read takes the tenant: another tenant's endpoint is not found. */
@Injectable()
export class WebhookEndpointRepository {
  constructor(
    @InjectModel(WEBHOOK_ENDPOINT_MODEL) private readonly endpoints: Model<WebhookEndpoint>,
    @InjectModel(WEBHOOK_ENDPOINT_TENANT_MODEL) private readonly tenants: Model<WebhookEndpointTenant>,
  ) {}

  async insert(session: ClientSession, endpoint: WebhookEndpoint): Promise<void> {
    await this.endpoints.insertMany([endpoint], { session });
  }

  findForTenant(tenant: string, id: string, session?: ClientSession): Promise<WebhookEndpoint | null> {
    return this.endpoints
      .findOne({ _id: id, tenant })
      .session(session ?? null)
      .lean<WebhookEndpoint>()
      .exec();
  }

  /** For the sender, which holds only the delivery's endpoint id. */
  findById(id: string): Promise<WebhookEndpoint | null> {
    return this.endpoints.findById(id).lean<WebhookEndpoint>().exec();
  }

  /**
   * In a create's transaction: how many endpoints the tenant has, exactly, for the cap. Under snapshot isolation
   * two creates would each count what their snapshot holds and insert different documents, so a burst of creates
   * at the cap would all commit. Each create first writes the tenant's one webhook_endpoint_tenants document:
   * racing creates of a tenant conflict there, the later retries (WriteConflict is transient) and counts again.
   * Deletes need no such write: they only lower the count.
   */
  async countForCreate(session: ClientSession, tenant: string, now: Date): Promise<number> {
    await this.tenants.updateOne({ _id: tenant }, { $set: { lastCreateAt: now } }, { session, upsert: true }).exec();
    return this.endpoints.countDocuments({ tenant }).session(session).exec();
  }

  /** The tenant's endpoints, newest first (all of them: the cap per tenant is at most 100). */
  listForTenant(tenant: string): Promise<WebhookEndpoint[]> {
    return this.endpoints.find({ tenant }).sort({ createdAt: -1, _id: -1 }).limit(100).lean<WebhookEndpoint[]>().exec();
  }

  /** The tenant's enabled endpoints subscribed to any of `types`, read in the dispatcher's transaction. */
  subscribedTo(session: ClientSession, tenant: string, types: string[]): Promise<WebhookEndpoint[]> {
    return this.endpoints
      .find({ tenant, status: 'enabled', events: { $in: [...types, ALL_EVENTS] } })
      .session(session)
      .lean<WebhookEndpoint[]>()
      .exec();
  }

  async update(tenant: string, id: string, changes: EndpointChanges, now: Date): Promise<WebhookEndpoint | null> {
    const set: Record<string, unknown> = { updatedAt: now };
    if (changes.url !== undefined) set.url = changes.url;
    if (changes.events !== undefined) set.events = changes.events;
    if (changes.enabled === true) Object.assign(set, { status: 'enabled', disabledReason: null, disabledAt: null, failingSince: null });
    if (changes.enabled === false) Object.assign(set, { status: 'disabled', disabledReason: 'manual', disabledAt: now });
    return this.endpoints.findOneAndUpdate({ _id: id, tenant }, { $set: set }, { returnDocument: 'after' }).lean<WebhookEndpoint>().exec();
  }

  async remove(tenant: string, id: string): Promise<boolean> {
    const { deletedCount } = await this.endpoints.deleteOne({ _id: id, tenant }).exec();
    return deletedCount === 1;
  }

  /** The new secret becomes the current one; the previous current one keeps signing until `overlapUntil`. */
  async rotate(session: ClientSession, endpoint: WebhookEndpoint, secret: EndpointSecret, overlapUntil: Date): Promise<void> {
    const kept = endpoint.secrets
      .filter((s) => s.expiresAt === null || s.expiresAt > secret.createdAt)
      .map((s) => (s.expiresAt === null ? { ...s, expiresAt: overlapUntil } : s));
    await this.endpoints
      .updateOne(
        { _id: endpoint._id, tenant: endpoint.tenant },
        { $set: { secrets: [secret, ...kept], updatedAt: secret.createdAt } },
        { session },
      )
      .exec();
  }

  /** Endpoints holding a secret sealed under another key than `keyId` (after a rotation of the encryption key). */
  sealedUnderOtherKeys(keyId: string): Promise<WebhookEndpoint[]> {
    return this.endpoints
      .find({ secrets: { $elemMatch: { 'sealed.keyId': { $ne: keyId } } } })
      .lean<WebhookEndpoint[]>()
      .exec();
  }

  /**
   * Replaces the secrets of an endpoint unchanged since it was read (a rotation or an edit moves `updatedAt`,
   * and then this writes nothing); `updatedAt` stays: sealing the same secrets again is not a change to it.
   */
  async replaceSecrets(endpoint: WebhookEndpoint, secrets: EndpointSecret[]): Promise<boolean> {
    const { modifiedCount } = await this.endpoints
      .updateOne({ _id: endpoint._id, updatedAt: endpoint.updatedAt }, { $set: { secrets } })
      .exec();
    return modifiedCount === 1;
  }

  /** A failed attempt: the endpoint is failing since now, unless it already was. */
  async markFailing(id: string, now: Date): Promise<void> {
    await this.endpoints.updateOne({ _id: id, failingSince: null }, { $set: { failingSince: now } }).exec();
  }

  async markHealthy(id: string): Promise<void> {
    await this.endpoints.updateOne({ _id: id, failingSince: { $ne: null } }, { $set: { failingSince: null } }).exec();
  }

  /** Disables an enabled endpoint that has failed everything since `before` or earlier; true when this call did it. */
  async disableIfFailingSince(id: string, before: Date, now: Date): Promise<boolean> {
    const { modifiedCount } = await this.endpoints
      .updateOne(
        { _id: id, status: 'enabled', failingSince: { $ne: null, $lte: before } },
        { $set: { status: 'disabled', disabledReason: 'failing', disabledAt: now, updatedAt: now } },
      )
      .exec();
    return modifiedCount === 1;
  }
}
