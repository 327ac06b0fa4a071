#!/usr/bin/env node
// The package's bin: `npx @idempotent-orders/idempotency-conformance --base-url URL --token T [...]`
// (or `idempotency-conformance ...` once installed); see HELP in options.ts.
import { readFile } from 'node:fs/promises';
import type { Json } from './bodies.js';
import { HELP, parseCliArgs, UsageError, type BodyFiles, type ConformanceOptions } from './options.js';
import { exitCodeFor, formatRow, formatSummary } from './report.js';
import { runConformance } from './run.js';

async function main(): Promise<number> {
  const command = parseCliArgs(process.argv.slice(2), process.env);
  if (command.kind === 'help') {
    console.log(HELP);
    return 0;
  }
  const options: ConformanceOptions = {
    ...command.options,
    ...(await readBodies(command.bodyFiles)),
    onRow: (row) => console.log(formatRow(row)),
  };
  const report = await runConformance(options);
  console.log(`\n${formatSummary(report)}`);
  console.log(`reports: ${options.junitPath}, ${options.jsonPath}`);
  return exitCodeFor(report);
}

async function readBodies(
  files: BodyFiles,
): Promise<Pick<ConformanceOptions, 'body' | 'otherBody' | 'refusedBody' | 'outageBody' | 'refundBody'>> {
  const read = async (path: string | undefined): Promise<Json | undefined> => {
    if (path === undefined) return undefined;
    try {
      return JSON.parse(await readFile(path, 'utf8')) as Json;
    } catch (error) {
      throw new UsageError(`${path}: ${(error as Error).message}`);
    }
  };
  return {
    body: await read(files.body),
    otherBody: await read(files.otherBody),
    refusedBody: await read(files.refusedBody),
    outageBody: await read(files.outageBody),
    refundBody: await read(files.refundBody),
  };
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`idempotency-conformance: ${error.message}\n\n${HELP}`);
      process.exitCode = 2;
      return;
    }
    console.error(error);
    process.exitCode = 1;
  },
);
