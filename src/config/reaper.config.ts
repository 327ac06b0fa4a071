import 'reflect-metadata';
import { IsBoolean, IsInt, Max, Min } from 'class-validator';

/** The reaper: how often, how much and for how long it takes over abandoned attempts (and where the sweeps run). */
export class ReaperEnvironment {
  @IsInt()
  @Min(100)
  @Max(3600000)
  REAPER_INTERVAL_MS: number = 10000;

  @IsInt()
  @Min(1)
  @Max(1000)
  REAPER_BATCH_SIZE: number = 50;

  @IsInt()
  @Min(100)
  @Max(600000)
  REAPER_TIME_BUDGET_MS: number = 5000;

  @IsBoolean()
  REAPER_ENABLED: boolean = true;
}

export interface ReaperSettings {
  enabled: boolean;
  intervalMs: number;
  batchSize: number;
  timeBudgetMs: number;
}

export function reaperSettings(env: ReaperEnvironment): ReaperSettings {
  return {
    enabled: env.REAPER_ENABLED,
    intervalMs: env.REAPER_INTERVAL_MS,
    batchSize: env.REAPER_BATCH_SIZE,
    timeBudgetMs: env.REAPER_TIME_BUDGET_MS,
  };
}
