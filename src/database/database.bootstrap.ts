import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';

export class NotAReplicaSetError extends Error {
  constructor() {
    super(
      'MongoDB is not a replica set: transactions need one. Point MONGODB_URI at a replica set ' +
        '(docker compose up, or mongod --replSet rs0 + rs.initiate()).',
    );
    this.name = 'NotAReplicaSetError';
  }
}

/**
 * Boot checks: refuse a standalone server, then build every index the schemas
 * declare. autoIndex is off, so nothing is built behind our back; readiness
 * stays down until `indexesReady`.
 */
@Injectable()
export class DatabaseBootstrap implements OnApplicationBootstrap {
  private readonly logger = new Logger(DatabaseBootstrap.name);
  private ready = false;

  constructor(@InjectConnection() private readonly connection: Connection) {}

  get indexesReady(): boolean {
    return this.ready;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.assertReplicaSet();
    for (const model of Object.values(this.connection.models)) {
      await model.createIndexes();
    }
    this.ready = true;
    this.logger.log(`Indexes built for ${Object.keys(this.connection.models).length} collections`);
  }

  private async assertReplicaSet(): Promise<void> {
    const hello = await this.connection.db!.admin().command({ hello: 1 });
    if (!hello.setName) throw new NotAReplicaSetError();
  }
}
