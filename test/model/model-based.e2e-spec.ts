import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Collection } from 'mongodb';
import type { ReconcileResult } from '../../src/payments/payment-gateway.port.js';
import { checkMoney, MoneyModel, moneyCommands, moneyOpening } from '../model/money-model.js';
import { checkInvariants, commandArbitraries, Model, settle } from '../model/protocol-model.js';
import {
  checkWebhooks,
  PROCESSING_BOUND_MS,
  settleWebhooks,
  WEBHOOK_SECRET,
  webhookCommands,
  WebhookModel,
} from '../model/webhook-model.js';
import { ProtocolSystem } from '../model/system.js';
import { ControllableGateway } from '../support/controllable-gateway.js';
import type { ControllableStripeGateway } from '../support/stripe-fake/controllable-stripe-gateway.js';
import { StripeFake } from '../support/stripe-fake/stripe-fake.js';

/**
 * The whole protocol, explored by the machine: fast-check generates
 * sequences of commands (requests on two instances, two requests of one key
 * racing on both instances, zombies held at the provider call and resumed
 * later, crashes at each fault point that leave their lease held, clock
 * steps onto and past the lease, retention and tombstone boundaries, reaper
 * passes on either instance, provider outages, erasures, also in the
 * millisecond of a request), runs them against two real apps on one store,
 * predicts the one reply each request must get and fails on any other,
 * compares its records, leases and tombstones with the database and runs
 * the invariant checker after every command and once the run is drained
 * and settled, and shrinks a failure to its shortest form. A second run
 * does the same with the in-flight wait and the Redis fast path on.
 *
 * MODEL_RUNS=500 for a soak; a failure prints its seed and path, and
 * MODEL_SEED=... MODEL_PATH=... replays exactly that run.
 */
const MODEL_RUNS = Number(process.env.MODEL_RUNS ?? 300);
/** The run with the in-flight wait and Redis on: each in-flight duplicate waits for real, so fewer runs. */
const MODEL_RUNS_WAIT = Number(process.env.MODEL_RUNS_WAIT ?? Math.ceil(MODEL_RUNS / 5));
const REDIS_URL = process.env.TEST_REDIS_URL;
const MAX_COMMANDS = 25;

function protocolProperty(system: ProtocolSystem) {
  return fc.asyncProperty(fc.commands(commandArbitraries(), { maxCommands: MAX_COMMANDS }), async (commands) => {
    const model = new Model();
    await system.reset();
    await fc.asyncModelRun(() => ({ model, real: system }), withInvariants(commands));
    await settle(model, system);
  });
}

function replayOptions(): fc.Parameters<unknown> {
  const seed = process.env.MODEL_SEED === undefined ? undefined : Number(process.env.MODEL_SEED);
  const path = process.env.MODEL_PATH;
  return { seed, path, endOnFailure: path !== undefined };
}

/** Checks the invariants after every command, so a failure names the first command that broke one. */
function withInvariants(commands: Iterable<fc.AsyncCommand<Model, ProtocolSystem>>): Iterable<fc.AsyncCommand<Model, ProtocolSystem>> {
  return [...commands].map((command) => ({
    check: (model: Readonly<Model>) => command.check(model),
    run: async (model: Model, system: ProtocolSystem) => {
      await command.run(model, system);
      await checkInvariants(model, system, false);
    },
    toString: () => command.toString(),
  }));
}

describe('model-based test of the idempotency protocol', () => {
  let system: ProtocolSystem;

  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model');
  });
  afterAll(async () => system.close());

  it(`holds every invariant over ${MODEL_RUNS} random runs of up to ${MAX_COMMANDS} commands`, async () => {
    const started = Date.now();
    await fc.assert(protocolProperty(system), { numRuns: MODEL_RUNS, verbose: 1, ...replayOptions() });
    process.stdout.write(`model-based: ${MODEL_RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }, 600_000);
});

// The same model with the in-flight wait (a duplicate waits for the answer, then 409) and the Redis fast path on:
// the contract says neither changes a single answer.
const describeWait = REDIS_URL ? describe : describe.skip;
if (!REDIS_URL) process.stdout.write('model-based with the in-flight wait and Redis SKIPPED: no redis-server (TEST_REDIS_URL unset)\n');
describeWait(`model-based test with the in-flight wait and the Redis fast path on${REDIS_URL ? '' : ' (SKIPPED: no redis-server)'}`, () => {
  let system: ProtocolSystem;

  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_wait', { inFlightWaitMs: 150, redisUrl: REDIS_URL });
  });
  afterAll(async () => system.close());

  it(`holds every invariant over ${MODEL_RUNS_WAIT} random runs`, async () => {
    const started = Date.now();
    await fc.assert(protocolProperty(system), { numRuns: MODEL_RUNS_WAIT, verbose: 1, ...replayOptions() });
    process.stdout.write(`model-based (wait + Redis): ${MODEL_RUNS_WAIT} runs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  }, 600_000);
});

/**
 * A planted defect: reconciliation only looks at the provider and does not
 * cancel a charge key it found unused, so a worker stalled before its charge
 * call can still charge after the reaper abandoned its order. Only an
 * interleaving finds it (hold a request before the provider, let the lease
 * expire, reap, resume); the same model-based run, within the same budget,
 * must find it.
 *
 * Its seed is fixed (MODEL_DEFECT_SEED overrides): over random seeds the
 * defect took 8 to 187 runs to find (mean ~65), so about one CI run in a
 * hundred would miss it within 300 and fail for no fault of the code.
 */
const DEFECT_SEED = Number(process.env.MODEL_DEFECT_SEED ?? 20261130);
/** The budget to find it in: fixed, whatever MODEL_RUNS says (the run stops at the failure, so it costs ~34 runs). */
const DEFECT_RUNS = Number(process.env.MODEL_DEFECT_RUNS ?? 300);
class LookOnlyReconcileGateway extends ControllableGateway {
  override async chargeOrCancel(chargeKey: string): Promise<ReconcileResult> {
    const result = await super.chargeOrCancel(chargeKey);
    // Takes the cancel marker back (the simulator keeps its collection private; this is test code).
    const charges = (this as unknown as { charges: Collection<{ _id: string }> }).charges;
    if (result.outcome === 'canceled') await charges.deleteOne({ _id: chargeKey });
    return result;
  }
}

describe('the model-based run finds a planted defect', () => {
  let system: ProtocolSystem;
  let control: ProtocolSystem;
  let counterexample: fc.AsyncCommand<Model, ProtocolSystem>[] | undefined;

  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_defect', { gateway: LookOnlyReconcileGateway });
  });
  afterAll(async () => {
    await system.close();
    await control?.close();
  });

  it('reconciliation that does not cancel the unused charge key: found and shrunk within the budget', async () => {
    const result = await fc.check(protocolProperty(system), { numRuns: DEFECT_RUNS, seed: DEFECT_SEED });
    expect(result.failed).toBe(true);
    counterexample = result.counterexample
      ? [...(result.counterexample[0] as Iterable<fc.AsyncCommand<Model, ProtocolSystem>>)]
      : undefined;
    process.stdout.write(
      `planted defect found after ${result.numRuns} runs: ${result.counterexample ? fc.stringify(result.counterexample[0]) : 'none'}\n`,
    );
    // The defect's own violation: the worker charged an order the reaper had abandoned.
    expect(String(result.errorInstance)).toMatch(/failed but charged at the provider|charge \S+: no order/);
  }, 600_000);

  // The very counterexample the defect produced, replayed on the real gateway: it must pass, or the model (not the
  // defect) was what failed.
  it('control: the shrunk counterexample passes on the real gateway', async () => {
    expect(counterexample).toBeDefined();
    control = await ProtocolSystem.start('test_model_control');
    const model = new Model();
    await control.reset();
    await fc.asyncModelRun(() => ({ model, real: control }), withInvariants(counterexample!));
    await settle(model, control);
  }, 600_000);
});

/**
 * A model run of `commands` (each one checked by `check` after it runs,
 * then `settle` at the end), counting the commands run per kind: printed, so
 * a kind that never runs - and so tests nothing - shows.
 */
function modelProperty<M extends object>(
  system: () => ProtocolSystem,
  commands: fc.Arbitrary<fc.AsyncCommand<M, ProtocolSystem>>[],
  newModel: () => M,
  check: (model: M, system: ProtocolSystem) => Promise<void>,
  stats: Map<string, number>,
  settleRun: (model: M, system: ProtocolSystem) => Promise<void> = async () => undefined,
  opening: fc.Arbitrary<fc.AsyncCommand<M, ProtocolSystem>[]> = fc.constant([]),
) {
  const sequences = fc
    .tuple(opening, fc.commands(commands, { maxCommands: MAX_COMMANDS, size: 'max' }))
    .map(([first, rest]) => [...first, ...rest]);
  return fc.asyncProperty(sequences, async (generated) => {
    const model = newModel();
    const real = system();
    await real.reset();
    const ranHere = new Set<string>();
    const checked = [...generated].map((command) => ({
      check: (m: Readonly<M>) => command.check(m),
      run: async (m: M, r: ProtocolSystem) => {
        const kind = command.toString().replace(/\(.*/, '');
        stats.set(kind, (stats.get(kind) ?? 0) + 1);
        // Runs that ran the kind at least once: a kind run 40 times in one run tested one sequence, not forty.
        if (!ranHere.has(kind)) stats.set(`${kind} runs`, (stats.get(`${kind} runs`) ?? 0) + 1);
        ranHere.add(kind);
        await command.run(m, r);
        await check(m, r);
      },
      toString: () => command.toString(),
    }));
    await fc.asyncModelRun(() => ({ model, real }), checked);
    await settleRun(model, real);
  });
}

/**
 * Per command kind: how many ran, in how many of the runs, and the most of
 * it one run held; `kinds` are the kinds the model has, so that one that
 * never ran (its precondition never met) is named, not just missing.
 */
function summary(what: string, runs: number, started: number, stats: Map<string, number>, kinds: string[]): string {
  const counted = [...stats].filter(([kind]) => !kind.endsWith(' runs'));
  const never = kinds.filter((kind) => !stats.has(kind));
  const perKind = counted
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([kind, count]) => `${kind} ${count} (in ${stats.get(`${kind} runs`)} runs, ${(count / runs).toFixed(1)}/run)`)
    .join(', ');
  return `model-based (${what}): ${runs} runs in ${((Date.now() - started) / 1000).toFixed(1)} s; commands run: ${perKind}${
    never.length ? `; NEVER RAN: ${never.join(', ')}` : ''
  }\n`;
}

/**
 * The money after the charge (issue 24): refunds, captures, voids and cancels
 * by key on the same two apps, every reply predicted and the money checked
 * against the provider after every command (test/model/money-model.ts).
 */
const MONEY_RUNS = Number(process.env.MODEL_MONEY_RUNS ?? Math.ceil(MODEL_RUNS / 5));
const MONEY_KINDS = [
  'create',
  'retryCreate',
  'refund',
  'refundRace',
  'refundTwoKeys',
  'refundCrash',
  'capture',
  'void',
  'cancelByKey',
  'cancelCrash',
  'cancelRace-cancel',
  'cancelRace-capture',
  'cancelRace-void',
  'plantedMismatch',
];

describe('model-based test of refunds, capture, void and cancel by key', () => {
  let system: ProtocolSystem;

  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_money');
  });
  afterAll(async () => system.close());

  it(`holds every money invariant over ${MONEY_RUNS} random runs of up to ${MAX_COMMANDS} commands`, async () => {
    const started = Date.now();
    const stats = new Map<string, number>();
    const check = (model: MoneyModel, real: ProtocolSystem) => checkMoney(model, real, false);
    await fc.assert(
      modelProperty(
        () => system,
        moneyCommands(),
        () => new MoneyModel(),
        check,
        stats,
        undefined,
        // Every run opens with orders to act on: with creates 2 of 16 kinds, a short run often made none, and every
        // later command (refund, capture, cancel...) was skipped - at the gate's 10 runs most runs tested nothing.
        moneyOpening(),
      ),
      {
        numRuns: MONEY_RUNS,
        verbose: 1,
        ...replayOptions(),
      },
    );
    process.stdout.write(summary('money', MONEY_RUNS, started, stats, MONEY_KINDS));
  }, 600_000);
});

/**
 * The same money model on the Stripe adapter (issue 35): both apps with
 * PAYMENT_PROVIDER=stripe, the real adapter talking HTTP through the SDK to
 * the local Stripe fake, whose every request and answer is checked against
 * Stripe's OpenAPI. The model's provider outages are Stripe's own faults,
 * played in turn by the fake on the call's endpoint: Stripe down, another
 * copy in flight (409), the answer lost after Stripe executed the request,
 * and a 5xx stored under the key after the money moved - the last two leave
 * money moved behind a 503, which the client's retry or the reaper must
 * find, never make twice. The provider's books are the fake's
 * PaymentIntents and Refunds; every reply, the stored state, findViolations
 * and settlement from Stripe's balance transactions are judged as on the
 * simulator.
 *
 * MODEL_MONEY_STRIPE_RUNS sets its budget (default: the simulator's money
 * runs - 10 in the gate, ~14 s on 2 shared cores; the soak sets 60, ~4 min).
 */
const MONEY_STRIPE_RUNS = Number(process.env.MODEL_MONEY_STRIPE_RUNS ?? MONEY_RUNS);

describe('model-based test of the money on the Stripe adapter, under Stripe faults', () => {
  let system: ProtocolSystem;
  const fake = new StripeFake();

  beforeAll(async () => {
    await fake.start();
    system = await ProtocolSystem.start('test_model_money_stripe', { stripe: fake });
  });
  afterAll(async () => {
    await system?.close();
    await fake.stop();
  });

  it(`holds every money invariant over ${MONEY_STRIPE_RUNS} random runs on Stripe`, async () => {
    const started = Date.now();
    const stats = new Map<string, number>();
    const check = (model: MoneyModel, real: ProtocolSystem) => checkMoney(model, real, false);
    await fc.assert(
      // One refund and one cancel in two meets one of Stripe's faults (one in five and three on the simulator).
      modelProperty(
        () => system,
        moneyCommands({ refund: 2, cancel: 2 }),
        () => new MoneyModel(),
        check,
        stats,
        undefined,
        moneyOpening(),
      ),
      { numRuns: MONEY_STRIPE_RUNS, verbose: 1, ...replayOptions() },
    );
    process.stdout.write(summary('money on Stripe', MONEY_STRIPE_RUNS, started, stats, MONEY_KINDS));
    const played: Record<string, number> = {};
    for (const { gateway } of system.instances)
      for (const [fault, count] of Object.entries((gateway as ControllableStripeGateway).faultsPlayed))
        played[fault] = (played[fault] ?? 0) + count;
    process.stdout.write(`model-based (money on Stripe): Stripe faults played ${JSON.stringify(played)}\n`);
  }, 600_000);
});

/**
 * Asynchronous payments and their webhooks (issue 25): the provider settling
 * charges, events delivered once, several times at once, late, out of order
 * or never, the processing bound passing - every reply predicted, every
 * event applied at most once, the ledger equal to the provider, and nothing
 * left processing once a run is settled (test/model/webhook-model.ts).
 */
const WEBHOOK_RUNS = Number(process.env.MODEL_WEBHOOK_RUNS ?? Math.ceil(MODEL_RUNS / 5));
const WEBHOOK_KINDS = [
  'createAsync',
  'retryCreate',
  'providerSettles',
  'deliver-processing',
  'deliver-outcome',
  'deliver-other-amount',
  'deliver-contradiction',
  'processingBoundPasses',
  'cancelByKey',
];

describe('model-based test of webhooks and asynchronous payments', () => {
  let system: ProtocolSystem;

  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_webhooks', {
      env: { WEBHOOK_SECRETS: WEBHOOK_SECRET, PROCESSING_BOUND_MS: String(PROCESSING_BOUND_MS) },
    });
  });
  afterAll(async () => system.close());

  it(`holds every webhook invariant over ${WEBHOOK_RUNS} random runs of up to ${MAX_COMMANDS} commands`, async () => {
    const started = Date.now();
    const stats = new Map<string, number>();
    const check = (model: WebhookModel, real: ProtocolSystem) => checkWebhooks(model, real, false);
    await fc.assert(
      modelProperty(
        () => system,
        webhookCommands(),
        () => new WebhookModel(),
        check,
        stats,
        settleWebhooks,
      ),
      {
        numRuns: WEBHOOK_RUNS,
        verbose: 1,
        ...replayOptions(),
      },
    );
    process.stdout.write(summary('webhooks', WEBHOOK_RUNS, started, stats, WEBHOOK_KINDS));
  }, 600_000);
});
