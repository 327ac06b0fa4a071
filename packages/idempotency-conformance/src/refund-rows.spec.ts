import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROW_IDS, type RowId } from './rows.js';
import { runConformance } from './run.js';

// The refund rows end to end against a stand-in deployment in this process:
// keyed creates and keyed refunds with stored answers, in memory. Its
// switches break one refund rule at a time, to show the row that checks it
// FAILs. The rows' judges are unit-tested in evaluate.spec.ts; this checks
// what the rows send (resource first, its id, the amounts, the GET).
interface Rules {
  /** Refund past the captured amount (no 422). */
  overRefund?: boolean;
  /** Each copy of a refund under one key is a refund of its own. */
  noRefundKeys?: boolean;
}

interface Stored {
  fingerprint: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

function standIn(rules: Rules) {
  const stored = new Map<string, Stored>();
  const orders = new Map<string, { id: string; amountMinor: number; capturedMinor: number; refundedMinor: number }>();
  const seen: string[] = [];
  let sequence = 0;
  const answer = (response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    const text = JSON.stringify(body);
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(text);
    return { status, headers, body: text };
  };
  const server = http.createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      const url = request.url ?? '';
      seen.push(`${request.method} ${url.replace(/ord_\d+/, 'ord_N')}`);
      const order = /^\/api\/v1\/orders\/(ord_\d+)$/.exec(url);
      if (request.method === 'GET' && order) {
        const found = orders.get(order[1]);
        return found ? answer(response, 200, found) : answer(response, 404, { code: 'not_found' });
      }
      const key = String(request.headers['idempotency-key'] ?? '');
      if (!key) return answer(response, 400, { code: 'idempotency_key_missing' });
      const recordKey = rules.noRefundKeys && url.includes('/refunds') ? `${key}-${++sequence}` : key;
      const previous = stored.get(recordKey);
      if (previous) {
        if (previous.fingerprint !== raw) return answer(response, 422, { code: 'idempotency_key_reused' });
        response.writeHead(previous.status, { 'content-type': 'application/json', ...previous.headers, 'idempotent-replayed': 'true' });
        return response.end(previous.body);
      }
      const remember = (result: { status: number; headers: Record<string, string>; body: string }) =>
        stored.set(recordKey, { fingerprint: raw, ...result });
      if (url === '/api/v1/orders') {
        const id = `ord_${++sequence}`;
        orders.set(id, { id, amountMinor: 100, capturedMinor: 100, refundedMinor: 0 });
        return remember(answer(response, 201, orders.get(id), { location: `/v1/orders/${id}` }));
      }
      const refund = /^\/api\/v1\/orders\/(ord_\d+)\/refunds$/.exec(url);
      const target = refund && orders.get(refund[1]);
      if (!target) return answer(response, 404, { code: 'not_found' });
      const { amountMinor } = JSON.parse(raw) as { amountMinor: number };
      if (!rules.overRefund && target.refundedMinor + amountMinor > target.capturedMinor)
        return answer(response, 422, { code: 'refund_exceeds_captured' });
      target.refundedMinor += amountMinor;
      const id = `rfd_${++sequence}`;
      return remember(answer(response, 201, { id, orderId: target.id, amountMinor, state: 'succeeded' }));
    });
  });
  return { server, seen, orders };
}

const REFUND_ROWS: RowId[] = ['refund-replay', 'refund-other-body', 'refund-concurrent-duplicates', 'refund-over-capture'];
const OTHERS = Object.fromEntries(ROW_IDS.filter((id) => !REFUND_ROWS.includes(id)).map((id) => [id, 'not this spec'])) as Partial<
  Record<RowId, string>
>;

describe('the refund rows against a stand-in deployment', () => {
  const servers: http.Server[] = [];
  const start = async (rules: Rules = {}) => {
    const deployment = standIn(rules);
    servers.push(deployment.server);
    await new Promise<void>((resolve) => deployment.server.listen(0, '127.0.0.1', resolve));
    return { ...deployment, baseUrl: `http://127.0.0.1:${(deployment.server.address() as AddressInfo).port}/api` };
  };
  const statuses = (report: Awaited<ReturnType<typeof runConformance>>) =>
    Object.fromEntries(report.rows.filter((row) => REFUND_ROWS.includes(row.id as RowId)).map((row) => [row.id, row.status]));
  let deployment: Awaited<ReturnType<typeof start>>;

  beforeAll(async () => {
    deployment = await start();
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('are SKIP without --refund-path, saying so', async () => {
    const report = await runConformance({ baseUrl: deployment.baseUrl, token: 't', skip: OTHERS });
    expect(report.rows.filter((row) => row.status !== 'SKIP' || !row.reason.startsWith('skipped by --skip'))).toEqual(
      REFUND_ROWS.map((id) =>
        expect.objectContaining({ id, status: 'SKIP', reason: 'skipped: no --refund-path (a refund route with {id})' }),
      ),
    );
  });

  it('pass on a deployment that keeps the rules, judging over-capture by the GET when --resource-path is given', async () => {
    const report = await runConformance({
      baseUrl: deployment.baseUrl,
      token: 't',
      skip: OTHERS,
      refundPath: '/v1/orders/{id}/refunds',
      resourcePath: '/v1/orders/{id}',
    });
    expect(statuses(report)).toEqual(Object.fromEntries(REFUND_ROWS.map((id) => [id, 'PASS'])));
    const overCapture = report.rows.find((row) => row.id === 'refund-over-capture')!;
    expect(overCapture.reason).toBe('the second refund 422; the resource shows refundedMinor 51 (the first alone)');
    // Three resources of their own: replay + other body, concurrent, over capture; then the GET of the last.
    expect(deployment.seen.filter((line) => line === 'POST /api/v1/orders')).toHaveLength(3);
    expect(deployment.seen).toContain('GET /api/v1/orders/ord_N');
    expect([...deployment.orders.values()].map((order) => order.refundedMinor).sort((a, b) => a - b)).toEqual([10, 10, 51]);
  });

  it('judge over-capture by the answers without --resource-path', async () => {
    const report = await runConformance({ baseUrl: deployment.baseUrl, token: 't', skip: OTHERS, refundPath: '/v1/orders/{id}/refunds' });
    expect(report.rows.find((row) => row.id === 'refund-over-capture')).toMatchObject({
      status: 'PASS',
      reason: expect.stringContaining('judged by the answers') as unknown as string,
    });
  });

  it.each<[string, Rules, RowId[]]>([
    ['refunds past the captured amount', { overRefund: true }, ['refund-over-capture']],
    [
      'refund keys ignored (every copy a refund of its own)',
      { noRefundKeys: true },
      ['refund-replay', 'refund-other-body', 'refund-concurrent-duplicates'],
    ],
  ])('FAIL the rule broken: %s', async (_, rules, failing) => {
    const broken = await start(rules);
    const report = await runConformance({
      baseUrl: broken.baseUrl,
      token: 't',
      skip: OTHERS,
      refundPath: '/v1/orders/{id}/refunds',
      resourcePath: '/v1/orders/{id}',
    });
    const expected = Object.fromEntries(REFUND_ROWS.map((id) => [id, failing.includes(id) ? 'FAIL' : 'PASS']));
    expect(statuses(report)).toEqual(expected);
  });
});
