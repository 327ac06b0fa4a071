import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { webhookDeliveryConfig, type WebhookDeliveryConfig } from '../config/config.tokens.js';
import type { WebhookDeliverySettings } from '../config/configuration.js';
import { WebhookSigner } from './webhook-signer.js';

/** A provider event as the simulator sends it (Standard Webhooks payload `{ type, timestamp, data }`). */
export interface ProviderEvent {
  /** The webhook-id: one per event, the same on every delivery of it. */
  id: string;
  type: string;
  timestamp: Date;
  data: Record<string, unknown>;
}

/** What the sender did so far (tests and the benchmark read it). */
export interface DeliveryStats {
  /** Events handed to send(). */
  events: number;
  /** Events dropped on purpose (loss rate): never delivered. */
  lost: number;
  /** Extra copies scheduled (duplicate rate). */
  duplicates: number;
  /** HTTP requests made, retries included. */
  attempts: number;
  /** Deliveries answered 2xx. */
  delivered: number;
  /** Deliveries given up after maxAttempts. */
  abandoned: number;
  /** Answers by status (`network` for no answer). */
  statuses: Record<string, number>;
}

export type DeliveryOptions = Omit<WebhookDeliverySettings, 'url'> & { url?: string };

const ATTEMPT_TIMEOUT_MS = 5000;

/**
 * The simulated provider's webhook deliveries, over real HTTP, the way real
 * providers behave: at least once, after a delay, sometimes twice
 * (duplicateRate), out of order (a random jitter per delivery), sometimes
 * never (lossRate), retried with exponential backoff until a 2xx or
 * maxAttempts, each attempt signed anew (fresh webhook-timestamp) with every
 * current secret - rotate() switches them, like a provider's secret roll.
 * Nothing waits for it: send() schedules and returns; drain() waits until
 * every scheduled delivery has finished (tests, the benchmark).
 */
@Injectable()
export class SimulatedWebhookSender implements OnApplicationShutdown {
  private readonly logger = new Logger(SimulatedWebhookSender.name);
  private options: DeliveryOptions;
  private signer: WebhookSigner;
  private readonly inFlight = new Set<Promise<void>>();
  /** Pending waits: on shutdown each is cut short, and the delivery behind it sees `stopped` and ends. */
  private readonly timers = new Map<NodeJS.Timeout, () => void>();
  private stopped = false;
  private random: () => number = Math.random;
  stats: DeliveryStats = emptyStats();

  constructor(@Inject(webhookDeliveryConfig.KEY) config: WebhookDeliveryConfig) {
    this.options = { ...config };
    this.signer = new WebhookSigner(config.secrets);
  }

  /** Changes how deliveries behave from now on (tests: the target URL once the app listens, rates, delays). */
  configure(options: Partial<DeliveryOptions>): void {
    this.options = { ...this.options, ...options };
    if (options.secrets) this.signer = new WebhookSigner(options.secrets);
  }

  /** A secret roll: sign with these from now on (list the new and the old one while receivers switch). */
  rotate(secrets: string[]): void {
    this.configure({ secrets });
  }

  /** Deterministic choices for a test (loss, duplicates, jitter). */
  useRandom(random: () => number): void {
    this.random = random;
  }

  get enabled(): boolean {
    return this.options.url !== undefined && this.options.secrets.length > 0 && !this.stopped;
  }

  /** Schedules the event's deliveries; returns at once. Without a URL, nothing is sent. */
  send(event: ProviderEvent): void {
    if (!this.enabled) return;
    this.stats.events++;
    if (this.random() < this.options.lossRate) {
      this.stats.lost++;
      return;
    }
    const copies = this.random() < this.options.duplicateRate ? 2 : 1;
    this.stats.duplicates += copies - 1;
    const body = JSON.stringify({ type: event.type, timestamp: event.timestamp.toISOString(), data: event.data });
    for (let copy = 0; copy < copies; copy++) {
      const delay = this.options.delayMs + Math.floor(this.random() * this.options.jitterMs);
      this.track(this.later(delay).then(() => this.deliver(event.id, body)));
    }
  }

  /** Resolves when every delivery scheduled so far (and any scheduled meanwhile) has finished. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  resetStats(): void {
    this.stats = emptyStats();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const [timer, resolve] of this.timers) {
      clearTimeout(timer);
      resolve();
    }
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private async deliver(id: string, body: string): Promise<void> {
    for (let attempt = 1; attempt <= this.options.maxAttempts && !this.stopped; attempt++) {
      if (attempt > 1) await this.later(this.options.backoffMs * 2 ** (attempt - 2));
      if (this.stopped || !this.options.url) return;
      this.stats.attempts++;
      const status = await this.post(this.options.url, id, body);
      this.stats.statuses[status] = (this.stats.statuses[status] ?? 0) + 1;
      if (/^2\d\d$/.test(status)) {
        this.stats.delivered++;
        return;
      }
    }
    this.stats.abandoned++;
    this.logger.warn({ msg: 'webhook delivery abandoned', eventId: id, attempts: this.options.maxAttempts });
  }

  private async post(url: string, id: string, body: string): Promise<string> {
    try {
      const headers = { 'content-type': 'application/json', ...this.signer.sign(id, body, new Date()) };
      const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS) });
      await response.arrayBuffer();
      return String(response.status);
    } catch {
      return 'network';
    }
  }

  private later(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.set(timer, resolve);
    });
  }

  private track(delivery: Promise<void>): void {
    const tracked = delivery.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}

function emptyStats(): DeliveryStats {
  return { events: 0, lost: 0, duplicates: 0, attempts: 0, delivered: 0, abandoned: 0, statuses: {} };
}
