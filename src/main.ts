import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { existsSync } from 'node:fs';
import { configureApp, createAdapter, NEST_APP_OPTIONS } from './app.setup.js';
import { AppModule } from './app.module.js';
import { ConfigurationError, loadConfiguration, useEmbeddedStore } from './config/configuration.js';
import { MetricsService } from './metrics/metrics.service.js';
import { guardUnhandledRejections } from './metrics/unhandled-rejections.js';
import { EMULATOR_GAPS, resolveMongoBackend, type MongoBackend } from './database/embedded-mongo.js';

async function bootstrap(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfiguration(process.env);
  // Said once the JSON logger is in place, so every line of the process has one format.
  const notices: { level: 'log' | 'warn'; message: string }[] = [];

  let backend: MongoBackend | undefined;
  if (!config.mongo.uri) {
    backend = await resolveMongoBackend(process.env).catch((error: unknown) => {
      // The embedded store's packages are dev dependencies: an --omit=dev install has none of them.
      if ((error as NodeJS.ErrnoException)?.code === 'ERR_MODULE_NOT_FOUND') {
        throw new Error('MONGODB_URI is unset and the embedded store is not installed (npm ci without --omit=dev); set MONGODB_URI');
      }
      throw error;
    });
    const embedded = backend;
    // The embedded server is a child process: take it down with us, however we exit.
    process.once('exit', () => void embedded.stop());
    // Its data lived in that process: serving on without it would only answer 503 until someone noticed.
    embedded.onUnexpectedExit((reason) => {
      new Logger('Bootstrap').fatal(`The embedded MongoDB stopped on its own (${reason}) and its data with it: exiting`);
      process.exit(1);
    });
    useEmbeddedStore(backend.uri);
    notices.push({ level: 'log', message: `No MONGODB_URI: started an embedded ${backend.description} at ${backend.uri}` });
    if (backend.kind === 'emulator') {
      notices.push({ level: 'warn', message: `Embedded MongoDB is an emulator, for development only. Gaps: ${EMULATOR_GAPS}` });
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
    abortOnError: false,
  });
  configureApp(app);
  // A rejection nobody handled is logged (error, with its stack) and counted, not a crash of every request in flight.
  guardUnhandledRejections(app.get(MetricsService).unhandledRejections, new Logger('UnhandledRejection'));
  const logger = new Logger('Bootstrap');
  for (const notice of notices) logger[notice.level](notice.message);
  // SIGTERM: Nest's shutdown hooks stop the reaper and relay, close Fastify - which stops accepting
  // and drains in-flight requests - then close the pool, and exit (so 'exit' handlers run).
  // Past SHUTDOWN_GRACE_MS (a stalled provider call, say) the process exits anyway.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT'], { useProcessExit: true });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => setTimeout(() => process.exit(1), config.app.shutdownGraceMs).unref());
  }
  await app.listen(config.app.port, config.app.host);
  logger.log(`Listening on ${await app.getUrl()} (NODE_ENV=${config.app.env})`);
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigurationError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Startup failed: ${error instanceof Error ? error.message : String(error)}\n`);
  }
  process.exit(1);
});
