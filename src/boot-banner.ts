import type { LoggerService } from '@nestjs/common';

/** What a person needs from a boot, gathered by main.ts once the service listens. */
export interface BootFacts {
  /** Where it listens, e.g. http://127.0.0.1:3000. */
  url: string;
  env: string;
  docsEnabled: boolean;
  /** `api`: /metrics on the API port; `port`: its own listener at metricsUrl. */
  metrics: { listener: 'api' | 'port'; url: string; token: boolean };
  /** The dev tenant's secret when API_KEYS is unset, else the number of tenants configured. */
  devToken?: string;
  tenants: number;
  store: {
    /** What serves MongoDB: MONGODB_URI, or the embedded one's description. */
    description: string;
    uri?: string;
    /** The embedded store's caveats (emulator gaps, data kept or not): shown as lines under it. */
    caveats: string[];
  };
  devEncryptionKey: boolean;
  /** Where committed events go: a JetStream stream on a NATS server (no credentials), or nowhere outside this process. */
  events: { broker: 'jetstream'; server: string; stream: string } | { broker: 'in-process' };
}

/** The Events line: a person must see at a glance whether anything outside the process receives events. */
export function eventsLine(events: BootFacts['events']): string {
  return events.broker === 'jetstream'
    ? `  Events   NATS JetStream stream ${events.stream} at nats://${events.server} (subjects orders.events.<type>)`
    : '  Events   in-process only (NATS_URL unset): a log line each, nothing outside this process receives them';
}

/**
 * The lines a person reads once the service is up: where to send a request,
 * where the docs are, which token opens it, what the store is and what it
 * cannot do. Pure, so the banner is tested without booting anything.
 */
export function bootBanner(facts: BootFacts): string[] {
  const metrics = facts.metrics.listener === 'api' ? `${facts.url}/metrics` : `${facts.metrics.url}/metrics (a listener of its own)`;
  const lines = [
    `Listening on ${facts.url} (NODE_ENV=${facts.env}): idempotent orders is ready`,
    `  API      ${facts.url}/v1/orders`,
    facts.docsEnabled
      ? `  Docs     ${facts.url}/docs (OpenAPI; JSON at /docs/json); guides and runnable requests in docs/api/`
      : '  Docs     /docs is off (DOCS_ENABLED); guides and runnable requests in docs/api/',
    `  Health   ${facts.url}/health/ready`,
    `  Metrics  ${metrics}${facts.metrics.token ? ' (Bearer METRICS_TOKEN)' : ''}`,
    facts.devToken
      ? `  Token    Authorization: Bearer ${facts.devToken} (the dev tenant "dev", every scope; API_KEYS unset - never in production)`
      : `  Token    one of the ${facts.tenants} API_KEYS tenants' secrets (Authorization: Bearer <secret>)`,
    `  Store    ${facts.store.description}${facts.store.uri ? ` at ${facts.store.uri}` : ''}`,
    ...facts.store.caveats.map((caveat) => `           - ${caveat}`),
    eventsLine(facts.events),
  ];
  if (facts.devEncryptionKey)
    lines.push('  Keys     stored answers sealed with the fixed dev key (IDEMPOTENCY_ENCRYPTION_KEY unset - never in production)');
  lines.push(`  Try      bash docs/api/requests/orders.sh${facts.url.endsWith(':3000') ? '' : ` (BASE_URL=${facts.url})`}`);
  return lines;
}

/** Nest's own start-up chatter: one line per module and per route, useful when debugging the wiring only. */
const FRAMEWORK_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

/**
 * The app's logger, with Nest's start-up chatter (~65 lines: every module
 * loaded, every route mapped) moved from info to debug, so a boot shows the
 * lines a person acts on. LOG_LEVEL=debug shows them again.
 */
export function quietFramework(logger: LoggerService): LoggerService {
  const contextOf = (params: unknown[]) => params[params.length - 1];
  return {
    log: (message: unknown, ...params: unknown[]) => {
      if (FRAMEWORK_CONTEXTS.has(contextOf(params) as string)) logger.debug?.(message, ...params);
      else logger.log(message, ...params);
    },
    error: (message: unknown, ...params: unknown[]) => void logger.error(message, ...params),
    warn: (message: unknown, ...params: unknown[]) => void logger.warn(message, ...params),
    debug: (message: unknown, ...params: unknown[]) => void logger.debug?.(message, ...params),
    verbose: (message: unknown, ...params: unknown[]) => void logger.verbose?.(message, ...params),
    fatal: (message: unknown, ...params: unknown[]) => void logger.fatal?.(message, ...params),
    setLogLevels: (levels) => void logger.setLogLevels?.(levels),
  };
}
