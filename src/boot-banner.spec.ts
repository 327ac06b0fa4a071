import { describe, expect, it } from '@jest/globals';
import type { LoggerService } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bootBanner, quietFramework, type BootFacts } from './boot-banner.js';
import { nodeVersionRefusal } from './node-version.js';

const FACTS: BootFacts = {
  url: 'http://127.0.0.1:3000',
  env: 'development',
  docsEnabled: true,
  metrics: { listener: 'api', url: 'http://127.0.0.1:3000', token: false },
  devToken: 'dev-secret-change-me',
  tenants: 1,
  store: { description: 'embedded EMULATOR', uri: 'mongodb://127.0.0.1:1/test', caveats: ['in memory: gone when the service stops'] },
  devEncryptionKey: true,
  events: { broker: 'in-process' },
};

describe('the boot banner', () => {
  it('names the URLs, the docs, the dev token and the store with its caveats', () => {
    const text = bootBanner(FACTS).join('\n');
    // The first line is the one scripts and test/process wait for.
    expect(bootBanner(FACTS)[0]).toBe('Listening on http://127.0.0.1:3000 (NODE_ENV=development): idempotent orders is ready');
    expect(text).toContain('API      http://127.0.0.1:3000/v1/orders');
    expect(text).toContain('Docs     http://127.0.0.1:3000/docs');
    expect(text).toContain('Metrics  http://127.0.0.1:3000/metrics');
    expect(text).toContain('Bearer dev-secret-change-me');
    expect(text).toContain('Store    embedded EMULATOR at mongodb://127.0.0.1:1/test');
    expect(text).toContain('- in memory: gone when the service stops');
    expect(text).toContain('fixed dev key');
  });

  it('says where events go: nowhere outside the process without NATS_URL, else the stream and server (never credentials)', () => {
    expect(bootBanner(FACTS).join('\n')).toContain('Events   in-process only (NATS_URL unset)');
    const text = bootBanner({ ...FACTS, events: { broker: 'jetstream', server: 'nats.internal:4222', stream: 'ORDER_EVENTS' } }).join('\n');
    expect(text).toContain('Events   NATS JetStream stream ORDER_EVENTS at nats://nats.internal:4222');
  });

  it('with API_KEYS set, never prints a secret; a metrics listener of its own is named', () => {
    const text = bootBanner({
      ...FACTS,
      devToken: undefined,
      tenants: 2,
      devEncryptionKey: false,
      metrics: { listener: 'port', url: 'http://127.0.0.1:9464', token: true },
    }).join('\n');
    expect(text).not.toContain('dev-secret-change-me');
    expect(text).toContain('one of the 2 API_KEYS tenants');
    expect(text).toContain('http://127.0.0.1:9464/metrics (a listener of its own) (Bearer METRICS_TOKEN)');
    expect(text).not.toContain('Keys ');
  });

  it("moves Nest's start-up chatter to debug and keeps every other line at its level", () => {
    const calls: string[] = [];
    const record = (level: string) => (message: unknown) => void calls.push(`${level}:${String(message)}`);
    const inner: LoggerService = { log: record('log'), warn: record('warn'), error: record('error'), debug: record('debug') };
    const logger = quietFramework(inner);
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/v1/orders, POST} route', 'RouterExplorer');
    logger.log('Listening', 'Bootstrap');
    logger.warn('careful', 'InstanceLoader');
    expect(calls).toEqual([
      'debug:AppModule dependencies initialized',
      'debug:Mapped {/v1/orders, POST} route',
      'log:Listening',
      'warn:careful',
    ]);
  });
});

describe('the Node version', () => {
  it('refuses Node < 24 in one line, and lets 24 and later run', () => {
    expect(nodeVersionRefusal('20.20.2')).toBe(
      'Node 20.20.2 is too old: this service needs Node 24 or later (nvm install 24 && nvm use 24, or fnm use 24; .nvmrc names it)\n',
    );
    expect(nodeVersionRefusal('22.12.0')).not.toBeNull();
    expect(nodeVersionRefusal('24.0.0')).toBeNull();
    expect(nodeVersionRefusal('26.1.0')).toBeNull();
  });

  const MAIN = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
  it('the built service refuses before anything else runs: one line on stderr, exit 1', () => {
    if (!existsSync(MAIN)) throw new Error('dist/src/main.js is missing: npm run build first (npm test does)');
    let failure: { status: number; stderr: Buffer; stdout: Buffer } | undefined;
    try {
      execFileSync(process.execPath, [MAIN], { env: { ...process.env, NODE_VERSION_OVERRIDE: '20.20.2' }, stdio: 'pipe', timeout: 20_000 });
    } catch (error) {
      failure = error as typeof failure;
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stdout.toString()).toBe('');
    expect(failure?.stderr.toString()).toBe(nodeVersionRefusal('20.20.2'));
  });
});
