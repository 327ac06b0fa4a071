import { MetricsService } from './metrics.service.js';

/*
 * What the checks of ops/alerts.rules.yml and docs/dashboards/ share: the
 * metric names a PromQL expression refers to, and the names a real
 * MetricsService exports. A query on a metric the service does not export
 * never fires or draws, and nobody notices until the incident it was for.
 */

/** PromQL words that look like identifiers but are not metrics. */
const PROMQL_WORDS = new Set([
  // aggregation operators (may be followed by `by`/`without` rather than `(`)
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
  // functions (normally caught by the following `(`, listed for safety)
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'predict_linear',
  'histogram_quantile',
  'abs',
  'absent',
  'absent_over_time',
  'ceil',
  'floor',
  'round',
  'clamp',
  'clamp_min',
  'clamp_max',
  'changes',
  'resets',
  'vector',
  'scalar',
  'time',
  'timestamp',
  'label_replace',
  'label_join',
  'sort',
  'sort_desc',
  'sqrt',
  'exp',
  'ln',
  'log2',
  'log10',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'last_over_time',
  'quantile_over_time',
  'stddev_over_time',
  'present_over_time',
  // keywords and modifiers
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'start',
  'end',
  'inf',
  'nan',
  // a label name that is easy to leave outside a clause
  'le',
]);

/**
 * Metric names referenced by a PromQL expression. Removes what may contain
 * identifiers that are not metrics (comments, strings, label matchers `{...}`,
 * ranges `[...]`, label lists of by/without/on/ignoring/group_*), then keeps
 * every remaining identifier that is neither a PromQL word nor a function call:
 * names before `{` or `[`, and bare names before or after an operator.
 */
export function extractMetricNames(expr: string): string[] {
  const stripped = expr
    .replace(/#[^\n]*/g, ' ')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '[]')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '$1 ()');
  // Not preceded by a digit, letter or dot (skips the `m` of `5m`, the `e` of `1e-9`);
  // not followed by `(` (a function call).
  const identifiers = stripped.match(/(?<![\w.:])[a-zA-Z_:][\w:]*(?![\w:])(?!\s*\()/g) ?? [];
  return [...new Set(identifiers.filter((name) => !PROMQL_WORDS.has(name.toLowerCase())))];
}

/** Names Prometheus will see when it scrapes a real MetricsService. */
export async function exportedNames(): Promise<Set<string>> {
  const service = new MetricsService();
  const names = new Set<string>();
  for (const metric of await service.registry.getMetricsAsJSON()) {
    // prom-client's typings say enum, the runtime value is a string.
    const type = String(metric.type);
    if (type === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
    } else if (type === 'summary') {
      for (const suffix of ['', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
    } else {
      names.add(metric.name);
    }
  }
  service.registry.clear();
  return names;
}
