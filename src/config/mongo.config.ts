import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** The store of record: where it is, and how long any wait on it may last. */
export class MongoEnvironment {
  @IsOptional()
  @Matches(/^mongodb(\+srv)?:\/\/\S+$/, { message: 'must be a mongodb:// or mongodb+srv:// URI' })
  MONGODB_URI?: string;

  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,63}$/, { message: 'must be 1-63 letters, digits, _ or -' })
  MONGODB_DB_NAME: string = 'orders';

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_SERVER_SELECTION_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_CONNECT_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(300000)
  MONGODB_SOCKET_TIMEOUT_MS: number = 3000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_POOL_WAIT_TIMEOUT_MS: number = 2000;

  @IsInt()
  @Min(100)
  @Max(60000)
  MONGODB_PING_TIMEOUT_MS: number = 1000;

  @IsInt()
  @Min(100)
  @Max(120000)
  TRANSACTION_MAX_RETRY_MS: number = 5000;
}

export interface MongoSettings {
  uri?: string;
  dbName: string;
  serverSelectionTimeoutMs: number;
  /** TCP connect + handshake of a new connection. */
  connectTimeoutMs: number;
  /** Longest wait for the reply to one command on an open connection. */
  socketTimeoutMs: number;
  /** Longest wait for a free pooled connection. */
  poolWaitTimeoutMs: number;
  /** Bound on the readiness check's ping. */
  pingTimeoutMs: number;
  transactionMaxRetryMs: number;
}

/**
 * The URI of the embedded store main.ts started because MONGODB_URI was
 * unset. Kept here, not put into the environment: with MONGODB_URI set the
 * dev defaults would be refused, and an environment variable saying "this
 * URI is embedded" could be set by anyone for a real database.
 */
let embeddedStoreUri: string | undefined;

export function useEmbeddedStore(uri: string): void {
  embeddedStoreUri = uri;
}

export function mongoSettings(env: MongoEnvironment, deployment: Deployment, problems: string[]): MongoSettings {
  if (deployment.production && !env.MONGODB_URI) problems.push('MONGODB_URI: required when NODE_ENV=production');
  return {
    uri: env.MONGODB_URI ?? embeddedStoreUri,
    dbName: env.MONGODB_DB_NAME,
    serverSelectionTimeoutMs: env.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
    connectTimeoutMs: env.MONGODB_CONNECT_TIMEOUT_MS,
    socketTimeoutMs: env.MONGODB_SOCKET_TIMEOUT_MS,
    poolWaitTimeoutMs: env.MONGODB_POOL_WAIT_TIMEOUT_MS,
    pingTimeoutMs: env.MONGODB_PING_TIMEOUT_MS,
    transactionMaxRetryMs: env.TRANSACTION_MAX_RETRY_MS,
  };
}
