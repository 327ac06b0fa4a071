import { Inject, Injectable } from '@nestjs/common';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { ipLiteral, refusedAddress, type ResolvedAddress, type Resolver } from './address-rules.js';

/** The resolver deliveries connect through: `dns.lookup` by default, a stub in the tests of the address rules. */
export const WEBHOOK_RESOLVER = Symbol('WEBHOOK_RESOLVER');

export interface SendOutcome {
  /** The answer's status; null when none came (timeout, connection error, refused address). */
  httpStatus: number | null;
  error: 'timeout' | 'connection_error' | 'address_refused' | null;
  durationMs: number;
}

export interface SignedMessage {
  url: string;
  /** `webhook-id`: the event id, the same on every attempt. */
  id: string;
  payload: string;
  /** Every secret that signs now (the current one, and a rotated-out one for its last 24 hours). */
  secrets: string[];
}

class AddressRefusedError extends Error {}

/**
 * One attempt of one delivery: a POST with the Standard Webhooks headers,
 * never following a redirect (a 3xx is a failed attempt), cut at the
 * deadline, reading at most `maxResponseBytes` of the answer. The address is
 * checked when the socket connects, on the addresses the lookup returned, so
 * a name that resolves to a public address at registration and to a private
 * one now (DNS rebinding) is still refused: there is no check-then-connect gap.
 */
@Injectable()
export class WebhookSender {
  constructor(
    @Inject(outgoingWebhooksConfig.KEY) private readonly config: OutgoingWebhooksConfig,
    @Inject(WEBHOOK_RESOLVER) private readonly resolve: Resolver,
  ) {}

  async send(message: SignedMessage, now: Date): Promise<SendOutcome> {
    const started = performance.now();
    const finish = (httpStatus: number | null, error: SendOutcome['error']): SendOutcome => ({
      httpStatus,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      return finish(await this.post(message, now), null);
    } catch (error) {
      if (error instanceof AddressRefusedError) return finish(null, 'address_refused');
      if (error instanceof DeadlineError) return finish(null, 'timeout');
      return finish(null, 'connection_error');
    }
  }

  /** The headers of one attempt: every active secret signs (Standard Webhooks: several `v1,` signatures, space separated). */
  static headers(message: SignedMessage, now: Date): Record<string, string> {
    const signatures = message.secrets.map((secret) => new Webhook(secret).sign(message.id, now, message.payload));
    return {
      'content-type': 'application/cloudevents+json; charset=utf-8',
      'user-agent': 'idempotent-orders-webhooks/1',
      'webhook-id': message.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signatures.join(' '),
    };
  }

  private post(message: SignedMessage, now: Date): Promise<number> {
    const url = new URL(message.url);
    const literal = ipLiteral(url);
    // An IP literal is never looked up (Node connects to it directly): it is checked here instead.
    if (literal && !this.config.allowPrivate && refusedAddress(literal)) return Promise.reject(new AddressRefusedError());
    const body = Buffer.from(message.payload, 'utf8');
    const options: RequestOptions = {
      method: 'POST',
      headers: { ...WebhookSender.headers(message, now), 'content-length': String(body.length) },
      lookup: this.guardedLookup(),
      // A connection of its own per attempt: the address it reaches is the one just checked.
      agent: false,
    };
    return new Promise<number>((resolve, reject) => {
      // Once the status line is in, the attempt's outcome is known: cutting the body (64 kB, the deadline) does not change it.
      let status: number | null = null;
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, (response) => {
        status = response.statusCode ?? 0;
        void this.readCapped(response).then(() => resolve(status!));
      });
      const deadline = setTimeout(() => request.destroy(new DeadlineError()), this.config.timeoutMs);
      request.on('close', () => clearTimeout(deadline));
      request.on('error', (error) => (status === null ? reject(error) : resolve(status)));
      request.end(body);
    });
  }

  /** Reads at most maxResponseBytes of the answer and drops the connection past it: a receiver sending 1 GB costs us 64 kB. */
  private readCapped(response: IncomingMessage): Promise<void> {
    return new Promise((resolve) => {
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > this.config.maxResponseBytes) {
          response.destroy();
          resolve();
        }
      });
      response.on('end', resolve);
      response.on('error', () => resolve());
      response.on('close', resolve);
    });
  }

  /** dns.lookup's shape, over the resolver, refusing the connection when any address it gives is refused. */
  private guardedLookup(): LookupFunction {
    return (hostname, options, callback) => {
      this.resolve(hostname).then(
        (addresses) => {
          const refused = this.config.allowPrivate
            ? null
            : addresses.map((a) => refusedAddress(a.address)).find((reason) => reason !== null);
          if (refused) return callback(new AddressRefusedError(refused), '', 0);
          const usable = addresses.filter((a) => !options.family || a.family === options.family);
          if (usable.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
          if (options.all) return (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, usable);
          callback(null, usable[0].address, usable[0].family);
        },
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 0),
      );
    };
  }
}

class DeadlineError extends Error {}
