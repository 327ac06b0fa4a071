import { describe, expect, it } from '@jest/globals';
import { DEFAULTS, parseCliArgs, resolveOptions, UsageError, type CliCommand } from './options.js';

const BASE = ['--base-url', 'https://staging.example/api', '--token', 'tok-a'];

function run(argv: string[], env: Record<string, string> = {}): Extract<CliCommand, { kind: 'run' }> {
  const command = parseCliArgs(argv, env);
  if (command.kind !== 'run') throw new Error('expected a run');
  return command;
}

describe('command line', () => {
  it('maps the flags to options, with the report paths defaulted', () => {
    const { options, bodyFiles } = run([
      ...BASE,
      '--token-b',
      'tok-b',
      '--path',
      '/v1/refunds',
      '--concurrency',
      '8',
      '--body-file',
      'b.json',
      '--vary-field',
      'amount',
    ]);
    expect(options).toMatchObject({
      baseUrl: 'https://staging.example/api',
      token: 'tok-a',
      tokenB: 'tok-b',
      path: '/v1/refunds',
      concurrency: 8,
      varyField: 'amount',
      junitPath: DEFAULTS.junitPath,
      jsonPath: DEFAULTS.jsonPath,
    });
    expect(bodyFiles).toEqual({ body: 'b.json', otherBody: undefined, outageBody: undefined });
  });

  it('takes the tokens from the environment, the flags winning', () => {
    const env = { CONFORMANCE_TOKEN: 'env-a', CONFORMANCE_TOKEN_B: 'env-b' };
    expect(run(['--base-url', 'http://x'], env).options).toMatchObject({ token: 'env-a', tokenB: 'env-b' });
    expect(run(BASE, env).options.token).toBe('tok-a');
  });

  it('reads --skip and --expect-fail as row[:reason], repeatable', () => {
    const { options } = run([
      ...BASE,
      '--skip',
      'provider-outage:no simulator here',
      '--expect-fail',
      'quoted-key:issue 18: sf-string',
      '--expect-fail',
      'replay',
    ]);
    expect(options.skip).toEqual({ 'provider-outage': 'no simulator here' });
    expect(options.expectFail).toEqual({ 'quoted-key': 'issue 18: sf-string', replay: 'listed in --expect-fail' });
  });

  it('refuses unknown rows, flags and numbers with a usage error', () => {
    expect(() => parseCliArgs([...BASE, '--skip', 'replays'], {})).toThrow(
      new UsageError(
        '--skip: unknown row "replays" (rows: missing-key, malformed-key, key-sent-twice, quoted-key, first-use, replay, reordered-json, other-body, client-guidance, get-resource, concurrent-duplicates, lost-response, provider-outage, second-tenant, unauthenticated, refused-body, refund-replay, refund-other-body, refund-concurrent-duplicates, refund-over-capture)',
      ),
    );
    expect(() => parseCliArgs([...BASE, '--colour'], {})).toThrow(UsageError);
    expect(() => parseCliArgs([...BASE, '--concurrency', 'many'], {})).toThrow('--concurrency must be a whole number');
    expect(() => parseCliArgs(['--token', 't'], {})).toThrow('--base-url is required');
  });

  it('maps the refund flags (the refund rows run only with --refund-path)', () => {
    const { options, bodyFiles } = run([
      ...BASE,
      '--refund-path',
      '/v1/orders/{id}/refunds',
      '--refund-body-file',
      'refund.json',
      '--refund-amount-field',
      'amount.minor',
      '--refund-total',
      '2500',
      '--resource-path',
      '/v1/orders/{id}',
      '--refunded-field',
      'totals.refunded',
    ]);
    expect(options).toMatchObject({
      refundPath: '/v1/orders/{id}/refunds',
      refundAmountField: 'amount.minor',
      refundTotal: 2500,
      resourcePath: '/v1/orders/{id}',
      refundedField: 'totals.refunded',
    });
    expect(bodyFiles.refundBody).toBe('refund.json');
    expect(run(BASE).options.refundPath).toBeUndefined();
    expect(() => parseCliArgs([...BASE, '--refund-total', 'all'], {})).toThrow('--refund-total must be a whole number');
  });

  it('answers --help before checking anything else', () => {
    expect(parseCliArgs(['--help'], {})).toEqual({ kind: 'help' });
  });
});

describe('resolveOptions', () => {
  it('fills in the orders defaults', () => {
    expect(resolveOptions({ baseUrl: 'http://localhost:3000', token: 't' })).toMatchObject({
      path: '/v1/orders',
      varyField: 'customerId',
      outageField: 'paymentMethod.token',
      outageValue: 'tok_provider_down',
      keyStatusPath: '/v1/idempotency-keys/{key}',
      concurrency: 5,
      tokenB: null,
    });
  });

  it('has no refund path by default, and the refund defaults', () => {
    expect(resolveOptions({ baseUrl: 'http://x', token: 't' })).toMatchObject({
      refundPath: null,
      refundAmountField: 'amountMinor',
      resourcePath: null,
      refundedField: 'refundedMinor',
    });
  });

  it('checks the refund templates and total', () => {
    expect(() =>
      resolveOptions({ baseUrl: 'http://x', token: 't', refundPath: '/v1/refunds', resourcePath: 'v1/orders/{id}', refundTotal: 0 }),
    ).toThrow(
      '--refund-path must start with "/" and contain {id}; --resource-path must start with "/" and contain {id}; --refund-total must be a whole number >= 1',
    );
    expect(resolveOptions({ baseUrl: 'http://x', token: 't', refundPath: '/v1/orders/{id}/refunds' }).refundPath).toBe(
      '/v1/orders/{id}/refunds',
    );
  });

  it('an empty key-status path means "do not look"', () => {
    expect(resolveOptions({ baseUrl: 'http://x', token: 't', keyStatusPath: '' }).keyStatusPath).toBeNull();
  });

  it('lists every problem at once', () => {
    expect(() => resolveOptions({ baseUrl: 'ftp://x', token: '', path: 'v1/orders', concurrency: 50, keyStatusPath: '/keys' })).toThrow(
      '--base-url must be an http(s) URL, got "ftp://x"; --token is required (or CONFORMANCE_TOKEN); --path must start with "/", got "v1/orders"; --concurrency must be an integer from 2 to 20; --key-status-path must start with "/" and contain {key}',
    );
  });
});

describe('--config kit.json (issue 34: pointing the kit at /payments took 8 flags)', () => {
  const file = JSON.stringify({
    'base-url': 'https://staging.example/api',
    path: '/payments',
    'key-status-path': '',
    concurrency: 7,
    skip: ['provider-outage:no outage switch on staging'],
    'body-file': 'payment.json',
  });
  const withConfig = (argv: string[], text = file) => {
    const command = parseCliArgs(['--config', 'kit.json', ...argv], { CONFORMANCE_TOKEN: 'tok-env' }, (name) => {
      expect(name).toBe('kit.json');
      return text;
    });
    if (command.kind !== 'run') throw new Error('expected a run');
    return command;
  };

  it('reads the flags from the file, numbers included, the token still from the environment', () => {
    const { options, bodyFiles } = withConfig([]);
    expect(options).toMatchObject({
      baseUrl: 'https://staging.example/api',
      token: 'tok-env',
      path: '/payments',
      keyStatusPath: '',
      concurrency: 7,
      skip: { 'provider-outage': 'no outage switch on staging' },
    });
    expect(bodyFiles.body).toBe('payment.json');
  });

  it('lets a flag on the command line win over the file', () => {
    expect(withConfig(['--path', '/v2/payments', '--concurrency', '3']).options).toMatchObject({ path: '/v2/payments', concurrency: 3 });
  });

  it('refuses an unknown flag, a wrong type or text that is not JSON, naming the file', () => {
    expect(() => withConfig([], JSON.stringify({ 'base-uri': 'x' }))).toThrow(/--config kit\.json: unknown flag "base-uri"/);
    expect(() => withConfig([], JSON.stringify({ path: true }))).toThrow(UsageError);
    expect(() => withConfig([], '{path:')).toThrow(/not JSON/);
    expect(() => withConfig([], '[]')).toThrow(/a JSON object of flags/);
  });
});
