import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { ConfigModule, registerAs } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { ConfigurationError } from './config/environment.js';
import { DatabaseModule } from './database/database.module.js';
import { LedgerModule } from './ledger/ledger.module.js';
import { MetricsService } from './metrics/metrics.service.js';
import { ProviderStatementModule } from './payment-simulator/payment-simulator.module.js';
import { parseReconcileArgs, ReconcileUsageError } from './reconciliation/reconcile-args.js';
import { reportConfiguration, type ReportConfiguration } from './reconciliation/report-configuration.js';
import { SettlementReconciliation } from './reconciliation/settlement-reconciliation.service.js';
import { WorkInFlight } from './reconciliation/work-in-flight.js';

/** Metrics without their listener: the report is the output here. */
@Global()
@Module({ providers: [MetricsService], exports: [MetricsService] })
class CliMetricsModule {}

/**
 * Only what a report needs: the store, the ledger, the provider's statement
 * (bound here, as AppModule binds the service's adapters). No HTTP, no
 * timers, and only the settings a report reads (reportConfiguration).
 */
function reconcileCliModule(settings: ReportConfiguration) {
  const load = (Object.keys(settings) as (keyof ReportConfiguration)[]).map((name) => registerAs(name, () => settings[name]));
  @Module({
    imports: [
      ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load }),
      CliMetricsModule,
      DatabaseModule,
      LedgerModule,
      ProviderStatementModule,
    ],
    providers: [SettlementReconciliation, WorkInFlight],
  })
  class ReconcileCliModule {}
  return ReconcileCliModule;
}

/**
 * `npm run reconcile -- --from <date> --to <date>`: the settlement report
 * for [from, to) as JSON on stdout. Exit 0 when the ledger and the provider
 * agree, 1 when there are mismatches (each listed), 2 on a usage,
 * configuration or connection error (one line on stderr). Reads MONGODB_URI
 * like the service (an embedded store would hold nothing to reconcile).
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
  const settings = reportConfiguration(process.env);
  // Nest's own logger would print a failed boot's stack: the one line below says it.
  const app = await NestFactory.createApplicationContext(reconcileCliModule(settings), { logger: false, abortOnError: false });
  try {
    const report = await app.get(SettlementReconciliation).run(period.from, period.to);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return report.mismatches.length === 0 ? 0 : 1;
  } finally {
    await app.close();
  }
}

/** One line, never a stack: what an operator reads first. */
function oneLine(error: unknown): string {
  if (error instanceof ConfigurationError) return `invalid configuration: ${error.problems.join('; ')}`;
  return (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ');
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`reconcile failed: ${oneLine(error)}\n`);
    process.exit(2);
  },
);
