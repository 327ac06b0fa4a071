import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule, new FastifyAdapter());
await app.listen(process.env.PORT ?? 3000);
console.log(`listening on ${await app.getUrl()}`);
