import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Model } from 'mongoose';
import { IDEMPOTENCY_SETTINGS, type IdempotencySettings } from '../options.js';
import { retryWhileStoreUnavailable } from './boot-retry.js';
import { IDEMPOTENCY_MODELS, modelToken } from './schemas.js';

/** NamespaceExists (48): the collection is there already; CommandNotFound (59): a test emulator without `create`. */
const TOLERATED_CREATE_ERRORS = new Set([48, 59]);

/**
 * `indexes: 'bootstrap'` (the default): creates the package's collections
 * and their indexes before the app serves - a claim inside a transaction
 * needs its collection, and retention (`purge_ttl`) and the reaper's scans
 * need their indexes. `'manual'` when your own bootstrap builds every
 * model's indexes (this repository's app does), or your migrations do.
 */
@Injectable()
export class IdempotencyIndexes implements OnApplicationBootstrap {
  private readonly logger = new Logger(IdempotencyIndexes.name);

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(IDEMPOTENCY_SETTINGS) private readonly settings: IdempotencySettings,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.settings.indexes !== 'bootstrap') return;
    for (const { name } of IDEMPOTENCY_MODELS) {
      const model = this.moduleRef.get<Model<unknown>>(modelToken(name));
      const collection = model.collection.collectionName;
      // Tried again while the store cannot answer (after a crash, a build waits behind the dead process's transaction).
      await retryWhileStoreUnavailable(
        () => this.build(model),
        (error, delayMs) => this.logger.warn(`${collection} not built yet (${error.name}: ${error.message}); retrying in ${delayMs} ms`),
      );
    }
  }

  private async build(model: Model<unknown>): Promise<void> {
    try {
      await model.db.createCollection(model.collection.collectionName);
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code === undefined || !TOLERATED_CREATE_ERRORS.has(code)) throw error;
      if (code === 59)
        this.logger.warn(`createCollection is not supported by this server; ${model.collection.collectionName} is created on first write`);
    }
    await model.createIndexes();
  }
}
