import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { AppConfigModule } from '../config/config.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ProviderStatement } from './provider-statement.js';
import { parseReconcileArgs, ReconcileUsageError } from './reconcile-args.js';
import { SettlementReconciliation } from './settlement-reconciliation.service.js';
import { SimulatedProviderStatement } from './simulated-provider-statement.js';
import { WorkInFlight } from './work-in-flight.js';

/** Metrics without their listener: the report is the output here. */
@Global()
@Module({ providers: [MetricsService], exports: [MetricsService] })
class CliMetricsModule {}

/** Only what a report needs: the store, the ledger, the provider's statement. No HTTP, no timers. */
@Module({
  imports: [AppConfigModule, CliMetricsModule, DatabaseModule, LedgerModule],
  providers: [SettlementReconciliation, WorkInFlight, { provide: ProviderStatement, useClass: SimulatedProviderStatement }],
})
class ReconcileCliModule {}

/**
 * `npm run reconcile -- --from <date> --to <date>`: the settlement report
 * for [from, to) as JSON on stdout. Exit 0 when the ledger and the provider
 * agree, 1 when there are mismatches (each listed), 2 on a usage or
 * connection error. Reads MONGODB_URI like the service (an embedded store
 * would hold nothing to reconcile).
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let period;
  try {
    period = parseReconcileArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof ReconcileUsageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  if (!process.env.MONGODB_URI) {
    process.stderr.write('MONGODB_URI is not set: point it at the database to reconcile\n');
    return 2;
  }
  // The scheduled pass is the service's; this process runs one report and exits.
  process.env.REAPER_ENABLED = 'false';
  const app = await NestFactory.createApplicationContext(ReconcileCliModule, { logger: ['error'], abortOnError: false });
  try {
    const report = await app.get(SettlementReconciliation).run(period.from, period.to);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return report.mismatches.length === 0 ? 0 : 1;
  } finally {
    await app.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`reconcile failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
