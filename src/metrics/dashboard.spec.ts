import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { exportedNames, extractMetricNames } from './promql-names.js';

/*
 * Keeps docs/dashboards/*.json honest, as alert-rules.spec.ts keeps the alert
 * rules: a panel on a metric the service does not export draws nothing, and
 * nobody notices until the incident it was for.
 */

const DASHBOARDS = fileURLToPath(new URL('../../docs/dashboards/', import.meta.url));

interface Panel {
  id: number;
  title: string;
  type: string;
  targets?: { refId: string; expr: string }[];
  panels?: Panel[];
}

interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
}

const dashboards = readdirSync(DASHBOARDS)
  .filter((file) => file.endsWith('.json'))
  .map((file) => ({ file, dashboard: JSON.parse(readFileSync(`${DASHBOARDS}${file}`, 'utf8')) as Dashboard }));

/** Every panel, rows' nested panels included. */
const panelsOf = (panels: Panel[]): Panel[] => panels.flatMap((panel) => [panel, ...panelsOf(panel.panels ?? [])]);

describe('docs/dashboards', () => {
  it('holds at least one Grafana dashboard, each with a uid, a title and unique panel ids', () => {
    expect(dashboards.length).toBeGreaterThan(0);
    for (const { file, dashboard } of dashboards) {
      expect({ file, uid: typeof dashboard.uid, title: typeof dashboard.title }).toEqual({ file, uid: 'string', title: 'string' });
      const ids = panelsOf(dashboard.panels).map((panel) => panel.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('queries, in every panel, only metric names a real MetricsService exports', async () => {
    const exported = await exportedNames();
    for (const { file, dashboard } of dashboards) {
      for (const panel of panelsOf(dashboard.panels).filter((candidate) => candidate.type !== 'row')) {
        const where = `${file}: ${panel.title}`;
        // A panel without a query, or a query without a metric, would pass the check below vacuously.
        expect({ where, targets: (panel.targets ?? []).length > 0 }).toEqual({ where, targets: true });
        for (const target of panel.targets ?? []) {
          const names = extractMetricNames(target.expr);
          expect({ where, expr: target.expr, hasMetric: names.length > 0 }).toEqual({ where, expr: target.expr, hasMetric: true });
          const unknown = names.filter((name) => !exported.has(name));
          expect({ where, unknown }).toEqual({ where, unknown: [] });
        }
      }
    }
  });

  it('shows what an operator looks for first: replays, conflicts, mismatches, lease wait, stuck pending, cache circuit, outbox lag, 5xx', () => {
    const queried = new Set(
      dashboards.flatMap(({ dashboard }) =>
        panelsOf(dashboard.panels).flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
      ),
    );
    const all = [...queried].join('\n');
    for (const needle of [
      'outcome="replayed"',
      'outcome="in_flight_conflict"',
      'outcome="payload_mismatch"',
      'idempotency_lease_wait_seconds_bucket',
      'idempotency_oldest_pending_age_seconds',
      'idempotency_cache_circuit_state',
      'outbox_backlog',
      'status=~"5.."',
    ]) {
      expect({ needle, shown: all.includes(needle) }).toEqual({ needle, shown: true });
    }
  });

  it("draws every metric the service exports: a feature's metric without a panel fails here", async () => {
    const missing = unpanelled(await appMetricNames(), queriedNames());
    expect(missing).toEqual([]);
  });

  it('the coverage check names a metric no panel queries (the check can fail)', async () => {
    const queried = queriedNames();
    queried.delete('webhook_refused_total');
    expect(unpanelled(await appMetricNames(), queried)).toEqual(['webhook_refused_total']);
  });

  it('fails on a misspelled metric (the check can fail)', async () => {
    const exported = await exportedNames();
    expect(extractMetricNames('max(outbox_backlogs)').filter((name) => !exported.has(name))).toEqual(['outbox_backlogs']);
  });
});

/** Every metric name the dashboards query. */
function queriedNames(): Set<string> {
  return new Set(
    dashboards.flatMap(({ dashboard }) =>
      panelsOf(dashboard.panels).flatMap((panel) => (panel.targets ?? []).flatMap((target) => extractMetricNames(target.expr))),
    ),
  );
}

/** The service's own metrics: what MetricsService exports less prom-client's process and Node defaults. */
async function appMetricNames(): Promise<Set<string>> {
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults });
  const defaultNames = new Set((await defaults.getMetricsAsJSON()).map((metric) => metric.name));
  defaults.clear();
  const exported = await exportedNames();
  return new Set([...exported].filter((name) => !defaultNames.has(name.replace(/_(bucket|sum|count)$/, ''))));
}

/** Metrics no panel draws; a histogram counts as drawn when any of its series is queried. */
function unpanelled(app: Set<string>, queried: Set<string>): string[] {
  const base = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
  const drawn = new Set([...queried].map(base));
  return [...new Set([...app].map(base))].filter((name) => !drawn.has(name)).sort();
}
