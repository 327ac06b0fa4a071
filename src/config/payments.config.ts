import 'reflect-metadata';
import { IsInt, IsString, Matches, Max, Min } from 'class-validator';

/** The payment provider as this service sees it (retries, authorizations), and the simulator that plays it. */
export class PaymentsEnvironment {
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,63}$/, { message: 'must be 1-63 letters, digits, _ or -' })
  PAYMENT_SIMULATOR_DB_NAME: string = 'payment_simulator';

  @IsInt()
  @Min(0)
  @Max(60000)
  PAYMENT_SIMULATOR_LATENCY_MS: number = 0;

  @IsInt()
  @Min(1)
  @Max(3600)
  PAYMENT_RETRY_AFTER_SECONDS: number = 2;

  /** How long the simulated provider holds a manual-capture authorization (7 days, as card networks commonly allow). */
  @IsInt()
  @Min(1)
  @Max(31 * 24 * 3600)
  PAYMENT_AUTHORIZATION_TTL_SECONDS: number = 7 * 24 * 3600;

  /** The simulator settles a `processing` charge on its own after this long (0: only when told, as the tests do). */
  @IsInt()
  @Min(0)
  @Max(3600000)
  PAYMENT_SIMULATOR_ASYNC_SETTLE_MS: number = 0;

  // The sweep of lapsed manual-capture authorizations (void or mark expired); runs where the reaper runs. 0 = off.
  @IsInt()
  @Min(0)
  @Max(3600000)
  AUTHORIZATION_SWEEP_INTERVAL_MS: number = 60000;

  @IsInt()
  @Min(1)
  @Max(1000)
  AUTHORIZATION_SWEEP_BATCH_SIZE: number = 50;
}

export interface PaymentsSettings {
  simulatorDbName: string;
  simulatorLatencyMs: number;
  retryAfterSeconds: number;
  /** The simulator's authorization lifetime (manual capture); a real provider sets its own. */
  authorizationTtlSeconds: number;
  /** The expiry sweep of lapsed authorizations (capture-void/authorization-expiry.sweep.ts); intervalMs 0 = off. */
  authorizationSweep: { intervalMs: number; batchSize: number };
  /** When the simulator settles an asynchronous charge by itself (0: never; settleProcessing does). */
  asyncSettleMs: number;
}

export function paymentsSettings(env: PaymentsEnvironment): PaymentsSettings {
  return {
    simulatorDbName: env.PAYMENT_SIMULATOR_DB_NAME,
    simulatorLatencyMs: env.PAYMENT_SIMULATOR_LATENCY_MS,
    retryAfterSeconds: env.PAYMENT_RETRY_AFTER_SECONDS,
    authorizationTtlSeconds: env.PAYMENT_AUTHORIZATION_TTL_SECONDS,
    asyncSettleMs: env.PAYMENT_SIMULATOR_ASYNC_SETTLE_MS,
    authorizationSweep: { intervalMs: env.AUTHORIZATION_SWEEP_INTERVAL_MS, batchSize: env.AUTHORIZATION_SWEEP_BATCH_SIZE },
  };
}
