import { afterAll, beforeAll, beforeEach, describe, it } from '@jest/globals';
import fc from 'fast-check';
import { AdvanceClockCommand, CrashCommand, Model, ReaperCommand, SendCommand, settle } from './model/protocol-model.js';
import { SETTINGS, ProtocolSystem } from './model/system.js';

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

  it('a zombie held after the charge, its record reaped past retention, then resumed', async () => {
    await run([
      new SendCommand(0, 'k-a', 0, 'after'),
      new CrashCommand(0, 'after-charged'),
      new AdvanceClockCommand(SETTINGS.ttlSeconds * 1000 + SETTINGS.leaseMs + 1),
      new ReaperCommand(0),
    ]);
  });
});
