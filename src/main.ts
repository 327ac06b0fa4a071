// First: an older Node gets one clear line, before anything else is evaluated.
import './node-version.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { existsSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { Logger as PinoLogger } from 'nestjs-pino';
import { bootBanner, quietFramework } from './boot-banner.js';
import { configureApp, createAdapter, NEST_APP_OPTIONS } from './app.setup.js';
import { AppModule } from './app.module.js';
import { ConfigurationError, DEV_API_SECRET, loadConfiguration, useEmbeddedStore } from './config/configuration.js';
import { MetricsService } from './metrics/metrics.service.js';
import { guardUnhandledRejections } from './metrics/unhandled-rejections.js';
import { EMULATOR_GAPS, findSharedStore, resolveMongoBackend, type MongoBackend } from './database/embedded-mongo.js';

async function bootstrap(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfiguration(process.env);
  // Said once the JSON logger is in place, so every line of the process has one format.
  const notices: { level: 'log' | 'warn'; message: string }[] = [];

  let store: { description: string; uri?: string; caveats: string[] } = { description: 'MONGODB_URI', caveats: [] };
  const shared = config.mongo.uri ? undefined : findSharedStore();
  if (shared) {
    // `npm run store` holds the embedded store in a process of its own: its data outlives this service.
    useEmbeddedStore(shared.uri);
    store = {
      description: `the shared embedded store of \`npm run store\` (pid ${shared.pid}): ${shared.description}`,
      uri: shared.uri,
      caveats: ['data kept across restarts of the service, until `npm run store` stops (never on disk)'],
    };
    if (shared.kind === 'emulator') store.caveats.push(`an emulator, for development only: ${EMULATOR_GAPS}`);
  } else if (!config.mongo.uri) {
    const backend: MongoBackend = await resolveMongoBackend(process.env).catch((error: unknown) => {
      // The embedded store's packages are dev dependencies: an --omit=dev install has none of them.
      if ((error as NodeJS.ErrnoException)?.code === 'ERR_MODULE_NOT_FOUND') {
        throw new Error('MONGODB_URI is unset and the embedded store is not installed (npm ci without --omit=dev); set MONGODB_URI');
      }
      throw error;
    });
    // The embedded server is a child process: take it down with us, however we exit.
    process.once('exit', () => void backend.stop());
    // Its data lived in that process: serving on without it would only answer 503 until someone noticed.
    backend.onUnexpectedExit((reason) => {
      new Logger('Bootstrap').fatal(`The embedded MongoDB stopped on its own (${reason}) and its data with it: exiting`);
      process.exit(1);
    });
    useEmbeddedStore(backend.uri);
    notices.push({ level: 'log', message: `No MONGODB_URI: started an embedded ${backend.description} at ${backend.uri}` });
    store = {
      description: `embedded ${backend.description}`,
      uri: backend.uri,
      caveats: ["in this process's memory: every order is gone when the service stops (`npm run store` keeps them across restarts)"],
    };
    if (backend.kind === 'emulator') {
      notices.push({ level: 'warn', message: `Embedded MongoDB is an emulator, for development only. Gaps: ${EMULATOR_GAPS}` });
      store.caveats.push(`an emulator, for development only: ${EMULATOR_GAPS}`);
    }
  }
  if (config.security.usingDevApiKey) {
    notices.push({
      level: 'warn',
      message: 'API_KEYS is not set: one dev tenant "dev" with the secret "dev-secret-change-me" (never in production)',
    });
  }
  if (config.idempotency.usingDevEncryptionKey) {
    notices.push({
      level: 'warn',
      message: 'IDEMPOTENCY_ENCRYPTION_KEY is not set: stored responses use a fixed dev key (never in production)',
    });
  }

  const app = await NestFactory.create<NestFastifyApplication>(AppModule, createAdapter(config.http), {
    ...NEST_APP_OPTIONS,
    bufferLogs: true,
    // The buffered start-up lines wait for the quieter logger below, not the first useLogger in configureApp.
    autoFlushLogs: false,
    abortOnError: false,
  });
  configureApp(app);
  app.useLogger(quietFramework(app.get(PinoLogger)));
  app.flushLogs();
  // A rejection nobody handled is logged (error, with its stack) and counted, not a crash of every request in flight.
  guardUnhandledRejections(app.get(MetricsService).unhandledRejections, new Logger('UnhandledRejection'));
  const logger = new Logger('Bootstrap');
  for (const notice of notices) logger[notice.level](notice.message);

  // Requests in flight, so a shutdown says what it waited for.
  let inFlight = 0;
  let drained = 0;
  let stopping: { signal: string; at: number } | undefined;
  const fastify = app.getHttpAdapter().getInstance();
  fastify.addHook('onRequest', (_request, _reply, done) => {
    inFlight += 1;
    done();
  });
  fastify.addHook('onResponse', (_request, _reply, done) => {
    inFlight -= 1;
    if (stopping) drained += 1;
    done();
  });
  // SIGTERM: Nest's shutdown hooks stop the reaper and relay, close Fastify - which stops accepting
  // and drains in-flight requests - then close the pool, and exit (so 'exit' handlers run).
  // Past SHUTDOWN_GRACE_MS (a stalled provider call, say) the process exits anyway.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopping = { signal, at: Date.now() };
      logger.log(
        `${signal}: stopping - no new connections, draining ${inFlight} request(s) in flight ` +
          `(at most SHUTDOWN_GRACE_MS=${config.app.shutdownGraceMs} ms), then the reaper, the outbox relay and the store connection`,
      );
      setTimeout(() => {
        logger.warn(`Shutdown grace of ${config.app.shutdownGraceMs} ms passed with ${inFlight} request(s) still in flight: exiting`);
        process.exit(1);
      }, config.app.shutdownGraceMs).unref();
    });
  }
  process.once('exit', (code) => {
    if (!stopping) return;
    const store = config.mongo.uri || shared ? '' : '; the embedded store stopped with it';
    const message = `Stopped after ${stopping.signal} in ${Date.now() - stopping.at} ms: ${drained} request(s) drained, exit ${code}${store}`;
    // At 'exit' only a synchronous write lands: the logger's stream to a pipe may still hold its buffer
    // (the line was lost that way). So this last line is written directly, in the logger's shape.
    const line =
      config.app.logFormat === 'json'
        ? JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, hostname: hostname(), context: 'Bootstrap', msg: message })
        : `[${new Date().toTimeString().slice(0, 8)}] INFO (${process.pid}): ${message} {"context":"Bootstrap"}`;
    writeSync(1, `${line}\n`);
  });
  await app.listen(config.app.port, config.app.host);
  const url = (await app.getUrl()).replace('[::1]', 'localhost');
  const banner = bootBanner({
    url,
    env: config.app.env,
    docsEnabled: config.app.docsEnabled,
    metrics: {
      listener: config.metrics.listener,
      url: config.metrics.listener === 'port' ? `http://${config.metrics.host}:${config.metrics.port}` : url,
      token: !!config.metrics.token,
    },
    devToken: config.security.usingDevApiKey ? DEV_API_SECRET : undefined,
    tenants: new Set(config.security.apiKeys.map((key) => key.tenant)).size,
    store,
    devEncryptionKey: config.idempotency.usingDevEncryptionKey,
    events: config.nats.url ? { broker: 'jetstream', server: config.nats.server!, stream: config.nats.stream } : { broker: 'in-process' },
  });
  for (const line of banner) logger.log(line);
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigurationError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Startup failed: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exit(1);
});
