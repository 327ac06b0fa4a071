import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { loadConfig } from './config.js';

const config = loadConfig(process.env);
const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), new FastifyAdapter(), {
  logger: ['error', 'warn'],
});
app.enableShutdownHooks();
await app.listen({ port: config.port, host: config.host });
const address = app.getHttpServer().address();
const port = typeof address === 'object' && address ? address.port : config.port;
console.log(`fresh-app ready: listening on http://${config.host}:${port}`);
