import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { securityConfig, type SecurityConfig } from '../config/config.tokens.js';
import { ApiKeyRegistry } from './api-key.registry.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { RateLimitGuard, rateLimitOptions } from './rate-limit.js';

/** Global guards, in this order: who is calling, then how fast. */
@Module({
  imports: [ThrottlerModule.forRootAsync({ inject: [securityConfig.KEY], useFactory: rateLimitOptions })],
  providers: [
    // One registry for the guard and the early refusal of bodies (app.setup.ts), so a request's key is digested once.
    { provide: ApiKeyRegistry, inject: [securityConfig.KEY], useFactory: (config: SecurityConfig) => new ApiKeyRegistry(config.apiKeys) },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
  ],
  exports: [ApiKeyRegistry],
})
export class AuthModule {}
