import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { securityConfig } from '../config/config.tokens.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { RateLimitGuard, rateLimitOptions } from './rate-limit.js';

/** Global guards, in this order: who is calling, then how fast. */
@Module({
  imports: [ThrottlerModule.forRootAsync({ inject: [securityConfig.KEY], useFactory: rateLimitOptions })],
  providers: [
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
  ],
})
export class AuthModule {}
