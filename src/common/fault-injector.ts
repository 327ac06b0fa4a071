import { Inject, Injectable, Logger } from '@nestjs/common';
import { appConfig, type AppConfig } from '../config/config.tokens.js';
import type { FaultPoint } from '../config/configuration.js';

/**
 * Crash injection for the chaos tests: with FAULT_INJECTION=true (refused in
 * production) and FAULT_CRASH_AT=<point>, the process SIGKILLs itself at that
 * point - no cleanup, no response, exactly like a power cut.
 */
@Injectable()
export class FaultInjector {
  private readonly logger = new Logger(FaultInjector.name);

  constructor(@Inject(appConfig.KEY) private readonly config: AppConfig) {}

  crashIf(point: FaultPoint): void {
    if (!this.config.faultInjection || this.config.faultCrashAt !== point) return;
    this.logger.warn(`FAULT_CRASH_AT=${point}: killing the process`);
    process.kill(process.pid, 'SIGKILL');
  }
}
