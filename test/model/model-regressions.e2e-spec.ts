import { afterAll, beforeAll, beforeEach, describe, it } from '@jest/globals';
import fc from 'fast-check';
import {
  CancelCommand,
  CancelCrashCommand,
  CancelRaceCommand,
  CaptureCommand,
  checkMoney,
  CreateCommand,
  MoneyModel,
  PlantedMismatchCommand,
  RefundCommand,
  RefundCrashCommand,
} from '../model/money-model.js';
import type { ControllableStripeGateway } from '../support/stripe-fake/controllable-stripe-gateway.js';
import { StripeFake, type Fault } from '../support/stripe-fake/stripe-fake.js';
import { AdvanceClockCommand, CrashCommand, EraseCommand, Model, ReaperCommand, SendCommand, settle } from '../model/protocol-model.js';
import { SETTINGS, ProtocolSystem } from '../model/system.js';

/** Counterexamples the model-based run found and shrank, kept as plain regression tests. */
describe('model-based regressions', () => {
  let system: ProtocolSystem;
  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_regressions');
  });
  beforeEach(async () => system.reset());
  afterAll(async () => system.close());

  const run = async (commands: fc.AsyncCommand<Model, ProtocolSystem>[]) => {
    const model = new Model();
    await fc.asyncModelRun(() => ({ model, real: system }), commands);
    await settle(model, system);
  };

  // The model's own accounting: a crash armed on the other instance does not fire in this one's reaper.
  it('a zombie held after the charge, its record completed by the reaper past retention, then resumed', async () => {
    await run([
      new SendCommand(0, 'k-a', 0, 'after'),
      new CrashCommand(1, 'after-charged'),
      new AdvanceClockCommand(SETTINGS.ttlSeconds * 1000 + SETTINGS.leaseMs + 1),
      new ReaperCommand(0),
    ]);
  });

  // Found by soaks: the customer was erased while their request waited at the provider; the reaper
  // abandoned the attempt; the request, resumed, started a new attempt with the erased id - at once,
  // or once the abandoned record had passed its retention.
  const PAST_LEASE = SETTINGS.leaseMs + 1;
  const PAST_RETENTION = SETTINGS.ttlSeconds * 1000 + SETTINGS.leaseMs + 1;
  it.each([
    ['declined card, past the lease', 2, PAST_LEASE, 0],
    ['good card, past retention', 0, PAST_RETENTION, 0],
    ['declined card, the abandoned record past its retention', 2, PAST_RETENTION, PAST_RETENTION],
    ['good card, the abandoned record past its retention', 0, PAST_LEASE, PAST_RETENTION],
  ])('an erasure while the request waits at the provider, then the reaper abandons it (%s)', async (_, variant, before, after) => {
    await run([
      new SendCommand(0, 'k-a', variant, 'before'),
      new AdvanceClockCommand(before),
      new EraseCommand(variant === 2 ? 1 : 0),
      new ReaperCommand(0),
      ...(after > 0 ? [new AdvanceClockCommand(after)] : []),
    ]);
  });

  // Found by CI (the planted-defect run, any gateway): a retry after the erasure took over the erased
  // attempt and was answered with the pseudonymized order. Its late retry past retention must not run
  // again (issue 21: the erased answer leaves a privacy-safe tombstone, so 409 and no second charge).
  it('a retry after the erasure finishes the erased attempt; past retention its late retry is refused', async () => {
    await run([
      new SendCommand(0, 'k-a', 0, 'before'),
      new AdvanceClockCommand(PAST_LEASE),
      new EraseCommand(0),
      new SendCommand(0, 'k-a', 0, 'none'),
      new AdvanceClockCommand(PAST_RETENTION),
      new SendCommand(0, 'k-a', 0, 'none'),
    ]);
  });

  // Found by CI (test:conflicts, seed 590374206): a request held at the provider when its customer
  // was erased, in the same millisecond as its arrival. Its attempt was taken over and finished; once
  // that record passed retention, the held request went round again and claimed the key afresh with
  // the erased customer id, because a tie between arrival and erasure counted as "after the erasure".
  it("a request that arrived in the same millisecond as its customer's erasure never claims after it", async () => {
    await run([
      new SendCommand(1, 'k-b', 0, 'after'),
      new CrashCommand(1, 'before-response'),
      new EraseCommand(0, { sameMillisecond: true }),
      new AdvanceClockCommand(PAST_RETENTION),
      new SendCommand(1, 'k-b', 3, 'none'),
      new AdvanceClockCommand(PAST_RETENTION),
    ]);
  });

  // Tombstones (README): the model refuses a late retry of an answered body that runs again, accepts
  // a new request from another body, and keeps refusing the same body after its customer's erasure
  // (issue 21: a privacy-safe tombstone stays; the late retry gets 409 and charges nothing).
  it.each([
    [
      'the same body is answered 409 from its tombstone',
      [new SendCommand(0, 'k-a', 0, 'none'), new AdvanceClockCommand(PAST_RETENTION), new SendCommand(1, 'k-a', 0, 'none')],
    ],
    [
      'another body is a new request',
      [new SendCommand(0, 'k-a', 0, 'none'), new AdvanceClockCommand(PAST_RETENTION), new SendCommand(1, 'k-a', 1, 'none')],
    ],
    [
      'a declined body is answered 409 too',
      [new SendCommand(0, 'k-a', 2, 'none'), new AdvanceClockCommand(PAST_RETENTION), new SendCommand(0, 'k-a', 2, 'none')],
    ],
    [
      'after the erasure the same body is still refused',
      [
        new SendCommand(0, 'k-a', 0, 'none'),
        new AdvanceClockCommand(PAST_RETENTION),
        new EraseCommand(0),
        new SendCommand(0, 'k-a', 0, 'none'),
      ],
    ],
    [
      'erased within retention, then past it, the same body is still refused',
      [
        new SendCommand(0, 'k-a', 0, 'none'),
        new EraseCommand(0),
        new SendCommand(1, 'k-a', 0, 'none'),
        new AdvanceClockCommand(PAST_RETENTION),
        new SendCommand(1, 'k-a', 0, 'none'),
        new AdvanceClockCommand(PAST_RETENTION),
        new SendCommand(0, 'k-a', 0, 'none'),
      ],
    ],
    [
      'once the tombstone itself expired, the same body is a new request',
      [
        new SendCommand(0, 'k-a', 0, 'none'),
        new AdvanceClockCommand(PAST_RETENTION),
        new SendCommand(0, 'k-a', 0, 'none'),
        new AdvanceClockCommand(SETTINGS.tombstoneSeconds * 1000),
        new SendCommand(0, 'k-a', 0, 'none'),
      ],
    ],
  ])('a late retry past retention: %s', async (_, commands) => {
    await run(commands);
  });

  // Issue 21 (M2): a record erased while in flight keeps a keyed fingerprint. Another body is still 422,
  // and only the same request takes the dead worker's attempt over, once its lease expired.
  it('erased in flight: another body gets 422, the same body resumes the attempt after the lease', async () => {
    await run([
      new CrashCommand(0, 'after-claim'),
      new SendCommand(0, 'k-a', 0, 'none'),
      new EraseCommand(0),
      new SendCommand(1, 'k-a', 3, 'none'),
      new SendCommand(1, 'k-a', 0, 'none'),
      new AdvanceClockCommand(PAST_LEASE),
      new SendCommand(1, 'k-a', 3, 'none'),
      new SendCommand(1, 'k-a', 0, 'none'),
    ]);
  });

  // A dead worker's lease is honoured until it expires (audit F8): 409 in use, then the takeover resumes it.
  it.each(['after-claim', 'after-charge', 'after-charged'] as const)(
    'a worker dead at %s: 409 until its lease expires, then resumed',
    async (point) => {
      await run([
        new CrashCommand(0, point),
        new SendCommand(0, 'k-a', 0, 'none'),
        new SendCommand(1, 'k-a', 0, 'none'),
        new AdvanceClockCommand(SETTINGS.leaseMs - 1),
        new SendCommand(1, 'k-a', 0, 'none'),
        new AdvanceClockCommand(1),
        new SendCommand(1, 'k-a', 0, 'none'),
      ]);
    },
  );
});

/** Each command checked as the money model checks it (test/model/model-based.e2e-spec.ts): the same judge, the same invariants. */
function checkedAfterEach<M extends object>(
  commands: fc.AsyncCommand<M, ProtocolSystem>[],
  check: (model: M, system: ProtocolSystem) => Promise<void>,
): fc.AsyncCommand<M, ProtocolSystem>[] {
  return commands.map((command) => ({
    check: (model: Readonly<M>) => command.check(model),
    run: async (model: M, system: ProtocolSystem) => {
      await command.run(model, system);
      await check(model, system);
    },
    toString: () => command.toString(),
  }));
}

/** Counterexamples of the money model (issue 32 item 7), each with the seed that found it on the code before its fix. */
describe('model-based regressions: money after the charge', () => {
  let system: ProtocolSystem;
  beforeAll(async () => {
    system = await ProtocolSystem.start('test_model_money_regressions');
  });
  beforeEach(async () => system.reset());
  afterAll(async () => system.close());

  const run = async (commands: fc.AsyncCommand<MoneyModel, ProtocolSystem>[]) => {
    const model = new MoneyModel();
    await fc.asyncModelRun(
      () => ({ model, real: system }),
      checkedAfterEach(commands, (m, r) => checkMoney(m, r, false)),
    );
  };

  it.each<[string, fc.AsyncCommand<MoneyModel, ProtocolSystem>[]]>([
    [
      // M-1, seed 938419697: the statement listed only `succeeded` charges, so a captured authorization was missing_at_provider.
      'a manual capture on clean books: reconciliation reports nothing',
      [new CreateCommand('manual', 'tok_visa', 'USD'), new CaptureCommand(0, 0, null)],
    ],
    [
      // L-1, seed -124319353: refunded at the provider, T1 not committed - amount_differs on books that were only in flight.
      'a refund crashed after the provider refunded: in flight, not a mismatch, then finished by the reaper',
      [new CreateCommand('automatic', 'tok_visa', 'USD'), new RefundCrashCommand(0, 0, 100, 'after-refund-provider')],
    ],
    [
      // H-1, seed 320333220: a repeat racing the cancel's own refund answered 200 nothing_to_undo, naming no refund.
      "a repeat of a cancel racing the cancel's own refund: a retryable 409, then one refund of it all",
      [new CreateCommand('automatic', 'tok_visa', 'USD'), new CancelRaceCommand(0, 'cancel')],
    ],
    [
      // H-1: the repeat after the cancel's refund met a 503 answered nothing_to_undo (its reservation read as money given back).
      "a cancel whose refund met a provider outage, repeated: the cancel's own refund resumed, all of it refunded",
      [new CreateCommand('automatic', 'tok_visa', 'JPY'), new CancelCommand(0, 0, true), new CancelCommand(0, 1, false)],
    ],
    [
      // H-1: another refund of the order in flight (released after a 503): the cancel refunded around its reservation.
      'a cancel while another refund of the order is pending after a 503: 409 cancel_in_progress, nothing settled',
      [
        new CreateCommand('automatic', 'tok_visa', 'EUR'),
        new RefundCommand(0, 0, 400, 0, true),
        new CancelCommand(0, 1, false),
        new RefundCommand(0, 0, 400, 1, false),
        new CancelCommand(0, 0, false),
      ],
    ],
    [
      // Seed 392782390 (found after the H-1/M-2 fixes): a cancel meeting a capture held at the provider, on the other
      // instance, answered the capture module's final 409 order_not_voidable (retryable: false, no Retry-After).
      'a cancel while a capture of the authorization is in flight: a retryable 409, then the captured money refunded',
      [new CreateCommand('manual', 'tok_visa', 'USD'), new CancelRaceCommand(0, 'capture')],
    ],
    [
      // The same seam against a void in flight.
      'a cancel while a void of the authorization is in flight: a retryable 409, nothing voided twice',
      [new CreateCommand('manual', 'tok_visa', 'JPY'), new CancelRaceCommand(0, 'void')],
    ],
    [
      // M-2: the cancel's refund crashed after its claim and was reaped, a partial refund, then every repeat was 422.
      'a cancel whose refund crashed and was reaped, a partial refund, the cancel again: the rest refunded',
      [
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new CancelCrashCommand(0),
        new RefundCommand(0, 0, 250, 1, false),
        new CancelCommand(0, 0, false),
      ],
    ],
    [
      // Found on Stripe (issue 35), a fault of the model: a planted mismatch on an order with a refund pending after a 503
      // was expected as a mismatch, but reconciliation rightly reports it in flight until the reaper's horizon.
      'a planted mismatch while a refund of the order is pending after a 503: in flight, not a mismatch',
      [new CreateCommand('automatic', 'tok_visa', 'USD'), new RefundCommand(0, 0, 100, 0, true), new PlantedMismatchCommand(0)],
    ],
  ])('%s', async (_, commands) => {
    await run(commands);
  });
});

/** The next outage on `instance` plays this Stripe fault (the one a counterexample was found with). */
class PinFaultCommand implements fc.AsyncCommand<MoneyModel, ProtocolSystem> {
  constructor(
    readonly instance: number,
    readonly fault: Fault,
  ) {}
  check = () => true;
  async run(_: MoneyModel, system: ProtocolSystem): Promise<void> {
    (system.instances[this.instance].gateway as ControllableStripeGateway).nextFaults.push(this.fault);
  }
  toString = () => `pinFault(i${this.instance}, ${this.fault})`;
}

/** Counterexamples of the money model on the Stripe adapter (issue 35), each failing on the code before its fix. */
describe('model-based regressions: money on the Stripe adapter', () => {
  let system: ProtocolSystem;
  const fake = new StripeFake();
  beforeAll(async () => {
    await fake.start();
    system = await ProtocolSystem.start('test_model_money_stripe_regressions', { stripe: fake });
  });
  beforeEach(async () => system.reset());
  afterAll(async () => {
    await system?.close();
    await fake.stop();
  });

  const run = async (commands: fc.AsyncCommand<MoneyModel, ProtocolSystem>[]) => {
    const model = new MoneyModel();
    await fc.asyncModelRun(
      () => ({ model, real: system }),
      checkedAfterEach(commands, (m, r) => checkMoney(m, r, false)),
    );
  };

  it.each<[string, fc.AsyncCommand<MoneyModel, ProtocolSystem>[]]>([
    [
      // Seed 20261201, path 12:2:2:4:0:3: Stripe stores a 5xx under the key even after the money moved, so the cancel's
      // refund answered 503 and every replay - the reaper's too - got the same 500 for 24 h: never finished, never
      // abandoned. The adapter now reads the payment's refunds on a 5xx: the cancel answers refunded at once.
      "a cancel whose refund met a 5xx after Stripe refunded: the refund found, the cancel's answer refunded",
      [
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new PinFaultCommand(1, 'server_error_after'),
        new CancelCommand(0, 1, true),
        new CancelCrashCommand(1),
      ],
    ],
    [
      // The same 5xx on a refund of its own key, then its retry: one refund at Stripe, never a second under a new key.
      'a refund that met a 5xx after Stripe refunded, retried under its key: one refund',
      [
        new CreateCommand('automatic', 'tok_visa', 'EUR'),
        new PinFaultCommand(0, 'server_error_after'),
        new RefundCommand(0, 0, 400, 0, true),
        new RefundCommand(0, 0, 400, 1, false),
      ],
    ],
    [
      // A lost answer (twice: the SDK's replay of a closed connection too) after Stripe refunded: 503, the refund
      // pending; the reaper finishes it from Stripe's stored answer, and the client's retry replays it.
      'a refund whose answer was lost after Stripe refunded: the reaper finishes it, the retry replays it',
      [
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new CreateCommand('automatic', 'tok_visa', 'JPY'),
        new PinFaultCommand(0, 'lose_answer'),
        new RefundCommand(0, 0, 250, 0, true),
        new CancelCrashCommand(1),
        new RefundCommand(0, 0, 250, 1, false),
      ],
    ],
    [
      // Seed 20261201, path 21:1:1:4:4:3:3:3: the cancel's own refund, its answer lost after Stripe refunded, finished
      // by the reaper; the cancel repeated answers what the reaper finished.
      "a cancel whose refund's answer was lost after Stripe refunded: the reaper finishes it, the cancel again",
      [
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new CreateCommand('automatic', 'tok_visa', 'USD'),
        new PinFaultCommand(0, 'lose_answer'),
        new CancelCommand(0, 0, true),
        new CancelCrashCommand(1),
        new CancelCommand(0, 1, false),
      ],
    ],
  ])('%s', async (_, commands) => {
    await run(commands);
  });
});
