import { DomainError } from '../common/domain-error.js';

export interface JsonLimits {
  maxDepth: number;
  maxValues: number;
}

export class JsonTooDeepError extends DomainError {
  readonly code = 'json_too_deep';
  constructor(maxDepth: number) {
    super(`The JSON body nests deeper than ${maxDepth} levels.`);
  }
}

export class JsonTooManyValuesError extends DomainError {
  readonly code = 'json_too_many_values';
  constructor(maxValues: number) {
    super(`The JSON body holds more than ${maxValues} values.`);
  }
}

/** Valid JSON that is not I-JSON (RFC 7493): it cannot be compared, stored or canonicalized faithfully. */
export class NotIJsonError extends DomainError {
  readonly code = 'json_not_i_json';
  constructor(what: string) {
    super(`The JSON body is not I-JSON (RFC 7493): it holds ${what}.`);
  }
}

export class MalformedJsonError extends DomainError {
  readonly code = 'malformed_json';
  constructor(detail = 'The body is not valid JSON.') {
    super(detail);
  }
}

/** Unknown fields are refused (400), and these are unknown everywhere. */
export class ForbiddenPropertyError extends DomainError {
  readonly code = 'validation_failed';
  constructor(property: string) {
    super(`property ${property} should not exist`);
    this.extensions = { errors: [this.message] };
  }
}

/*
 * class-transformer drops these keys silently (so the unknown-field rule never
 * sees them), and `__proto__` is how prototype pollution starts: no body of
 * ours ever needs them.
 */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** With the u flag a surrogate pair is one code point: only a lone surrogate is a Cs code point. */
const LONE_SURROGATE = /\p{Cs}/u;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;
const COMMA = 0x2c;

const COLON = 0x3a;

/**
 * One pass over the raw text, before JSON.parse: nesting depth, values and
 * repeated member names. What runs after parsing (class-transformer,
 * class-validator) recurses and pays per value, so a deep or crowded body
 * must be refused before it; this scan costs about 0.2 ms for 100 kB whatever
 * the shape. Values are counted as containers + commas, an upper bound of
 * "array items + object members". Malformed text is left to JSON.parse.
 *
 * Repeated names: JSON.parse keeps the last one and the parsed value cannot
 * tell, while a gateway, WAF or audit log in front may read the first - two
 * readers, two amounts (I-JSON, RFC 7493 2.3, forbids it; security review 3,
 * SEC4-05). Hand-written rather than a library because none in the tree
 * detects duplicates, and a second full parser (an AST) would double the cost
 * of every body; here it is one Set per object, filled from the same pass.
 * Names are compared decoded ("a" and "\u0061" are one name), through
 * JSON.parse of the name alone and only when it holds an escape.
 */
export function checkJsonShape(text: string, limits: JsonLimits): void {
  let depth = 0;
  let values = 0;
  let inString = false;
  let stringStart = 0;
  let escaped = false;
  // Per open container: the names seen (objects) or null (arrays); and whether the next string is a name.
  const names: (Set<string> | null)[] = [];
  let expectName = false;
  let pendingName: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === BACKSLASH) {
        escaped = true;
        i++;
      } else if (char === QUOTE) {
        inString = false;
        if (expectName) {
          const raw = text.slice(stringStart + 1, i);
          pendingName = escaped ? decodeName(text.slice(stringStart, i + 1)) : raw;
          expectName = false;
        }
      }
      continue;
    }
    if (char === QUOTE) {
      inString = true;
      stringStart = i;
      escaped = false;
    } else if (char === OPEN_ARRAY || char === OPEN_OBJECT) {
      if (++depth > limits.maxDepth) throw new JsonTooDeepError(limits.maxDepth);
      if (++values > limits.maxValues) throw new JsonTooManyValuesError(limits.maxValues);
      names.push(char === OPEN_OBJECT ? new Set() : null);
      expectName = char === OPEN_OBJECT;
    } else if (char === CLOSE_ARRAY || char === CLOSE_OBJECT) {
      depth--;
      names.pop();
      expectName = false;
    } else if (char === COMMA) {
      if (++values > limits.maxValues) throw new JsonTooManyValuesError(limits.maxValues);
      expectName = names.length > 0 && names[names.length - 1] !== null;
    } else if (char === COLON && pendingName !== null) {
      const seen = names[names.length - 1];
      if (seen) {
        if (seen.has(pendingName)) throw new NotIJsonError('a member name more than once in one object');
        seen.add(pendingName);
      }
      pendingName = null;
    }
  }
}

/** A member name with escapes, decoded; malformed text is left to JSON.parse (which refuses it). */
function decodeName(quoted: string): string {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted;
  }
}

/**
 * Walks the parsed document (already bounded by checkJsonShape) without
 * recursion: no forbidden keys, and I-JSON (RFC 7493) - every string and
 * member name well-formed Unicode (JSON.parse lets a lone surrogate such as
 * "\ud800" through), every number a finite double (JSON.parse turns 1e400
 * into Infinity). Such values cannot be canonicalized (RFC 8785), stored or
 * compared faithfully, so they are refused here, before anything reads them.
 */
export function checkDocument(document: unknown): void {
  const pending: unknown[] = [document];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) throw new NotIJsonError('a string with a lone surrogate');
      continue;
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new NotIJsonError('a number outside the range of IEEE 754 doubles');
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      pending.push(...(value as unknown[]));
      continue;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) throw new ForbiddenPropertyError(key);
      if (LONE_SURROGATE.test(key)) throw new NotIJsonError('a member name with a lone surrogate');
      pending.push((value as Record<string, unknown>)[key]);
    }
  }
}

/**
 * The application/json body parser: shape first, then JSON.parse, then the
 * forbidden keys and I-JSON. An empty body is no body (undefined), whatever
 * the Content-Type says - many clients send the header on every request: a
 * route whose body is optional (capture, void) then runs as without one, and
 * one that needs a body refuses it as it refuses a missing one.
 */
export function parseJsonBody(text: string, limits: JsonLimits): unknown {
  if (text.trim() === '') return undefined;
  checkJsonShape(text, limits);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new MalformedJsonError();
  }
  checkDocument(document);
  return document;
}
