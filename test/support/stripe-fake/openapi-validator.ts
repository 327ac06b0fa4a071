import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';

/**
 * Judges every request the adapter sends to the fake and every answer the
 * fake returns against Stripe's published OpenAPI description (the subset
 * this project uses, kept in openapi-subset.json with its source and
 * version). A mismatch is recorded and fails the test that caused it: the
 * fake must not drift into "our idea of Stripe".
 */
export interface StripeSubset {
  source: string;
  version: string;
  paths: Record<string, Record<string, OperationSpec>>;
  components: { schemas: Record<string, unknown> };
}

interface OperationSpec {
  parameters?: { in: string; name: string; required?: boolean; schema?: unknown }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}

export function loadSubset(): StripeSubset {
  const file = fileURLToPath(new URL('./openapi-subset.json', import.meta.url));
  return JSON.parse(readFileSync(file, 'utf8')) as StripeSubset;
}

export class StripeOpenApiValidator {
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly checked = new Set<string>();

  constructor(readonly subset: StripeSubset = loadSubset()) {
    // Stripe's schemas carry x- annotations and `format: unix-time`: annotations here, not rules.
    this.ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    this.ajv.addSchema({ $id: 'stripe', components: rebase(subset.components) as object });
  }

  /** The spec path template (`/v1/payment_intents/{intent}/capture`) a concrete path matches, or null when it is outside the subset. */
  template(path: string): string | null {
    for (const template of Object.keys(this.subset.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      if (pattern.test(path)) return template;
    }
    return null;
  }

  /** Problems with the parameters of a request ([] when valid). */
  request(method: string, path: string, params: Record<string, unknown>): string[] {
    const template = this.template(path);
    const operation = template ? this.subset.paths[template][method.toLowerCase()] : undefined;
    if (!template || !operation) return [`${method} ${path} is not in the OpenAPI subset`];
    this.checked.add(`${method} ${template} request`);
    if (method === 'GET') {
      const known = new Set((operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
      return Object.keys(params)
        .filter((name) => !known.has(name))
        .map((name) => `${method} ${template}: unknown query parameter ${name}`);
    }
    const schema = operation.requestBody?.content['application/x-www-form-urlencoded']?.schema;
    if (!schema) return Object.keys(params).length === 0 ? [] : [`${method} ${template} takes no body`];
    return this.run(`${method} ${template} request`, schema, coerceForm(params, schema, this.subset));
  }

  /** Problems with an answer's body ([] when valid): 2xx against the documented schema, errors against `error`. */
  response(method: string, path: string, status: number, body: unknown): string[] {
    const template = this.template(path);
    const operation = template ? this.subset.paths[template][method.toLowerCase()] : undefined;
    if (!template || !operation) return [`${method} ${path} is not in the OpenAPI subset`];
    const documented = operation.responses[String(status)] ?? operation.responses.default;
    const schema = documented?.content?.['application/json']?.schema;
    if (!schema) return [`${method} ${template}: status ${status} is not documented`];
    this.checked.add(`${method} ${template} ${status < 300 ? status : 'error'}`);
    return this.run(`${method} ${template} ${status}`, schema, body);
  }

  private run(id: string, schema: unknown, value: unknown): string[] {
    let validate = this.compiled.get(id);
    if (!validate) {
      validate = this.ajv.compile(rebase(schema) as object);
      this.compiled.set(id, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).slice(0, 5).map((error) => `${id}: ${error.instancePath || '/'} ${error.message ?? ''}`);
  }
}

/**
 * `#/components/...` refs of the subset point into the schema registered as
 * `stripe`; OpenAPI's `nullable` beside a `$ref` or `anyOf` (no `type`,
 * which Ajv's built-in `nullable` needs) becomes "that, or null".
 */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(schema)) {
    out[name] = name === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `stripe${value}` : rebase(value);
  }
  // Stripe's nullable enums list their values only; null is allowed by `nullable` (Ajv wants it in the enum too).
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...(out.enum as unknown[]), null];
  if (out.nullable === true && out.type === undefined) {
    delete out.nullable;
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

/**
 * Form bodies carry only strings: turn them into the types the schema
 * declares (integer, boolean) before validating, as Stripe's API does.
 */
function coerceForm(value: unknown, schema: unknown, subset: StripeSubset): unknown {
  const resolved = resolve(schema, subset);
  if (typeof value === 'string') {
    const types = typesOf(resolved, subset);
    if (types.has('integer') && /^-?\d+$/.test(value)) return Number(value);
    if (types.has('boolean') && (value === 'true' || value === 'false')) return value === 'true';
    return value;
  }
  if (Array.isArray(value)) {
    const items = (resolved as { items?: unknown } | null)?.items;
    return value.map((item) => coerceForm(item, items, subset));
  }
  if (value && typeof value === 'object') {
    const properties = collectProperties(resolved, subset);
    const out: Record<string, unknown> = {};
    for (const [name, child] of Object.entries(value)) out[name] = coerceForm(child, properties[name], subset);
    return out;
  }
  return value;
}

function resolve(schema: unknown, subset: StripeSubset): Record<string, unknown> | null {
  if (!schema || typeof schema !== 'object') return null;
  const ref = (schema as { $ref?: string }).$ref;
  if (ref) return resolve(subset.components.schemas[ref.replace('#/components/schemas/', '')], subset);
  return schema as Record<string, unknown>;
}

function typesOf(schema: Record<string, unknown> | null, subset: StripeSubset): Set<string> {
  const types = new Set<string>();
  if (!schema) return types;
  if (typeof schema.type === 'string') types.add(schema.type);
  for (const branch of [...((schema.anyOf as unknown[]) ?? []), ...((schema.oneOf as unknown[]) ?? [])]) {
    for (const type of typesOf(resolve(branch, subset), subset)) types.add(type);
  }
  return types;
}

function collectProperties(schema: Record<string, unknown> | null, subset: StripeSubset): Record<string, unknown> {
  if (!schema) return {};
  const own = (schema.properties as Record<string, unknown>) ?? {};
  const extra = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
  const merged: Record<string, unknown> = { ...own };
  for (const branch of [...((schema.anyOf as unknown[]) ?? []), ...((schema.oneOf as unknown[]) ?? [])]) {
    Object.assign(merged, collectProperties(resolve(branch, subset), subset));
  }
  if (extra) return new Proxy(merged, { get: (target, name: string) => target[name] ?? extra });
  return merged;
}
