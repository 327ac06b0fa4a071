import { Inject, Injectable } from '@nestjs/common';
import { writeSync } from 'node:fs';
import { appConfig, type AppConfig } from '../config/config.tokens.js';
import type { FaultPoint } from '../config/configuration.js';

/**
 * Crash injection for the chaos tests: with FAULT_INJECTION=true (refused in
 * production) and FAULT_CRASH_AT=<point>, the process SIGKILLs itself at that
 * point - no cleanup, no response, exactly like a power cut.
 */
@Injectable()
export class FaultInjector {
  constructor(@Inject(appConfig.KEY) private readonly config: AppConfig) {}

  crashIf(point: FaultPoint): void {
    if (!this.config.faultInjection || this.config.faultCrashAt !== point) return;
    // Written synchronously: nothing asynchronous survives the SIGKILL.
    writeSync(2, `FAULT_CRASH_AT=${point}: killing the process\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
