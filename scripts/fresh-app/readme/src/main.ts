import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

const app = await NestFactory.create(AppModule); // Express, Nest's default
await app.listen(process.env.PORT ?? 3000);
console.log(`listening on ${await app.getUrl()}`);
