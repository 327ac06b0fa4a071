// The request bodies the kit sends: the team's own body (or the orders
// default), the same JSON with its keys reordered, "another body" for the
// same key, and the body that makes the payment provider fail.

/** A JSON value: a request body as the kit sends it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface BodySpec {
  /** The request body of the route under test. */
  body: Json;
  /** Another valid body for the same key; default: `body` with `varyField` changed. */
  otherBody?: Json;
  /** A body the route refuses before it runs (a validation error); default `{}`. */
  refusedBody?: Json;
  /** Dotted path (items.0.quantity) of a field whose change makes another valid request. */
  varyField: string;
  /** A body the deployment answers with a provider outage; default: `body` with outageField = outageValue. */
  outageBody?: Json;
  outageField: string;
  outageValue: string;
}

/** Serialized once: a replay must send exactly the bytes of the first use. */
export interface Bodies {
  base: string;
  reordered: string;
  other: string;
  /** A body the route refuses before it runs (the refused-body row). */
  refused: string;
  /** Null when the outage row does not run (its field need not exist then). */
  outage: string | null;
}

/** POST /v1/orders of this service: 1.00 USD, the simulator's card that succeeds, the run's own customer. */
export function defaultOrderBody(runId: string): Json {
  return {
    customerId: `conformance_${runId}`,
    currency: 'USD',
    items: [{ sku: 'conformance_item', quantity: 1, unitPriceMinor: 100 }],
    paymentMethod: { token: 'tok_visa' },
  };
}

export function deriveBodies(spec: BodySpec, withOutage: boolean): Bodies {
  const other = spec.otherBody ?? varyField(spec.body, spec.varyField);
  const base = JSON.stringify(spec.body);
  if (JSON.stringify(other) === base) throw new Error('the other body is the same JSON as the body: it must differ');
  const outage = withOutage ? (spec.outageBody ?? setPath(spec.body, spec.outageField, spec.outageValue)) : null;
  return {
    base,
    reordered: JSON.stringify(reorderKeys(spec.body)),
    other: JSON.stringify(other),
    refused: JSON.stringify(spec.refusedBody ?? {}),
    outage: outage === null ? null : JSON.stringify(outage),
  };
}

/**
 * Every object's keys in reverse order, arrays untouched (array order is
 * meaningful; key order is not, in JSON and in the contract's fingerprint).
 */
export function reorderKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(reorderKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, child]) => [key, reorderKeys(child)]),
  );
}

/** A string gets a suffix, a number + 1, a boolean flips: small changes that stay valid for most schemas. */
export function varyField(body: Json, path: string): Json {
  const current = getPath(body, path);
  if (typeof current === 'string') return setPath(body, path, `${current}_other`);
  if (typeof current === 'number') return setPath(body, path, current + 1);
  if (typeof current === 'boolean') return setPath(body, path, !current);
  const found = current === undefined ? 'not in the body' : `${jsonType(current)}, not a string, number or boolean`;
  throw new Error(`cannot vary "${path}": it is ${found}; give another body`);
}

export function getPath(value: Json, path: string): Json | undefined {
  let node: Json | undefined = value;
  for (const segment of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = Array.isArray(node) ? node[Number(segment)] : Object.hasOwn(node, segment) ? node[segment] : undefined;
  }
  return node;
}

/** A copy with the field at `path` replaced; the field must exist (a typo must not add a field the route refuses). */
export function setPath(value: Json, path: string, next: Json): Json {
  if (getPath(value, path) === undefined) throw new Error(`"${path}" is not in the body`);
  const copy = structuredClone(value);
  const segments = path.split('.');
  const parent = segments.length === 1 ? copy : getPath(copy, segments.slice(0, -1).join('.'));
  const last = segments[segments.length - 1];
  if (Array.isArray(parent)) parent[Number(last)] = next;
  else (parent as Record<string, Json>)[last] = next;
  return copy;
}

function jsonType(value: Json): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'array' : typeof value;
}

/** The refund body when none is given: the amount (set per request, 0 here) at `amountField`, and a reason. */
export function defaultRefundBody(amountField: string, reason: string): Json {
  const body: { [key: string]: Json } = { reason };
  let node = body;
  const segments = amountField.split('.');
  for (const segment of segments.slice(0, -1)) {
    const child: { [key: string]: Json } = {};
    node[segment] = child;
    node = child;
  }
  node[segments[segments.length - 1]] = 0;
  return body;
}

/** The refund body with `amount` at `amountField`, serialized once (a replay must send the same bytes). */
export function refundBodyFor(template: Json, amountField: string, amount: number): string {
  return JSON.stringify(setPath(template, amountField, amount));
}
