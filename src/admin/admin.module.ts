import { Module } from '@nestjs/common';
import { IdempotencyKeysController } from './idempotency-keys.controller.js';

/** Operators' routes over the idempotency package's records (the key view, releasing a stuck lease); scope `admin`. */
@Module({ controllers: [IdempotencyKeysController] })
export class AdminModule {}
