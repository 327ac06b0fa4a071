import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { exportedNames, extractMetricNames } from './promql-names.js';

/*
 * Keeps ops/alerts.rules.yml honest: an alert on a metric the service does
 * not export never fires, and nobody notices until the incident it was for.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES_FILE = `${REPO_ROOT}ops/alerts.rules.yml`;
const RUNBOOK_URL = /(?:^|\/)docs\/runbooks\/([a-z0-9][a-z0-9-]*\.md)$/;
const SEVERITIES = ['page', 'ticket'];

interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description: string; runbook_url: string };
}

interface RulesFile {
  groups: { name: string; rules: AlertRule[] }[];
}

function loadRules(): AlertRule[] {
  const file = parse(readFileSync(RULES_FILE, 'utf8')) as RulesFile;
  return file.groups.flatMap((group) => group.rules);
}

describe('ops/alerts.rules.yml', () => {
  it('is a rules file of groups whose rules each have alert, expr, for, severity and annotations', () => {
    const file = parse(readFileSync(RULES_FILE, 'utf8')) as RulesFile;
    expect(Array.isArray(file.groups)).toBe(true);
    expect(file.groups.length).toBeGreaterThan(0);
    const alerts = new Set<string>();
    for (const group of file.groups) {
      expect(typeof group.name).toBe('string');
      expect(group.rules.length).toBeGreaterThan(0);
      for (const rule of group.rules) {
        expect(rule.alert).toMatch(/^[A-Z][A-Za-z0-9]+$/);
        expect(alerts.has(rule.alert)).toBe(false);
        alerts.add(rule.alert);
        expect(typeof rule.expr).toBe('string');
        expect(rule.for).toMatch(/^\d+[smh]$/);
        expect(SEVERITIES).toContain(rule.labels?.severity);
        expect(rule.annotations?.summary?.length).toBeGreaterThan(0);
        expect(rule.annotations?.description?.length).toBeGreaterThan(0);
      }
    }
  });

  it('references only metric names a real MetricsService exports', async () => {
    const exported = await exportedNames();
    for (const rule of loadRules()) {
      const names = extractMetricNames(rule.expr);
      // An expression with no metric in it would pass the check below vacuously.
      expect({ alert: rule.alert, hasMetric: names.length > 0 }).toEqual({ alert: rule.alert, hasMetric: true });
      const unknown = names.filter((name) => !exported.has(name));
      expect({ alert: rule.alert, unknown }).toEqual({ alert: rule.alert, unknown: [] });
    }
  });

  it('links every rule to a runbook that exists in docs/runbooks/', () => {
    for (const rule of loadRules()) {
      const match = RUNBOOK_URL.exec(rule.annotations.runbook_url ?? '');
      expect({ alert: rule.alert, runbook: match?.[1] ?? null }).toEqual({ alert: rule.alert, runbook: expect.any(String) });
      expect({ alert: rule.alert, exists: existsSync(`${REPO_ROOT}docs/runbooks/${match![1]}`) }).toEqual({
        alert: rule.alert,
        exists: true,
      });
    }
  });

  it('pages on any duplicate creation', () => {
    const pages = loadRules().filter(
      (rule) => rule.labels.severity === 'page' && extractMetricNames(rule.expr).includes('idempotency_duplicate_creations_total'),
    );
    expect(pages).toHaveLength(1);
    expect(pages[0].expr).toContain('increase(idempotency_duplicate_creations_total[5m]) > 0');
    expect(pages[0].for).toBe('0m');
  });

  it('pages on any attempt stopped by a conflicting document (never a silent 500 loop)', () => {
    const pages = loadRules().filter(
      (rule) => rule.labels.severity === 'page' && extractMetricNames(rule.expr).includes('idempotency_state_conflicts_total'),
    );
    expect(pages).toHaveLength(1);
    expect(pages[0].expr).toContain('increase(idempotency_state_conflicts_total[5m]) > 0');
    expect(pages[0].for).toBe('0m');
    expect(pages[0].annotations.runbook_url).toBe('docs/runbooks/half-applied-state.md');
  });
});

describe('extractMetricNames', () => {
  it('finds names before selectors, ranges and operators, and skips functions, keywords and labels', () => {
    expect(
      extractMetricNames(
        'histogram_quantile(0.99, sum by (le, operation) (rate(idempotency_store_duration_seconds_bucket{operation="claim"}[5m]))) > 0.1',
      ),
    ).toEqual(['idempotency_store_duration_seconds_bucket']);
    expect(extractMetricNames('max(outbox_backlog) > 100 and max(deriv(outbox_backlog[10m])) > 0')).toEqual(['outbox_backlog']);
    expect(extractMetricNames('x_total > 0 unless x_total offset 5m or y / clamp_min(z, 1e-9)')).toEqual(['x_total', 'y', 'z']);
    expect(extractMetricNames('sum(rate(http_requests_total{status=~"5..", route!="/metrics"}[5m])) by (route)')).toEqual([
      'http_requests_total',
    ]);
  });

  it('catches a misspelled metric, so a rule on it fails the check', async () => {
    const exported = await exportedNames();
    const names = extractMetricNames('increase(idempotency_duplicate_creation_total[5m]) > 0');
    expect(names).toEqual(['idempotency_duplicate_creation_total']);
    expect(exported.has('idempotency_duplicate_creation_total')).toBe(false);
    expect(exported.has('idempotency_duplicate_creations_total')).toBe(true);
    // A histogram's own name is not a series: only _bucket, _sum and _count are.
    expect(exported.has('idempotency_store_duration_seconds')).toBe(false);
    expect(exported.has('idempotency_store_duration_seconds_bucket')).toBe(true);
  });
});
