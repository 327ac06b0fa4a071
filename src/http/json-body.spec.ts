import { describe, expect, it } from '@jest/globals';
import {
  checkJsonShape,
  ForbiddenPropertyError,
  JsonTooDeepError,
  JsonTooManyValuesError,
  MalformedJsonError,
  NotIJsonError,
  parseJsonBody,
} from './json-body.js';

const limits = { maxDepth: 4, maxValues: 20 };

describe('JSON body limits', () => {
  it('parses a body within the limits', () => {
    expect(parseJsonBody('{"a":[1,2,{"b":"c"}],"d":null}', limits)).toEqual({ a: [1, 2, { b: 'c' }], d: null });
  });

  it('refuses nesting deeper than the limit before parsing, arrays and objects alike', () => {
    expect(() => checkJsonShape('[[[[1]]]]', limits)).not.toThrow();
    expect(() => checkJsonShape('[[[[[1]]]]]', limits)).toThrow(JsonTooDeepError);
    expect(() => checkJsonShape('{"a":{"a":{"a":{"a":{"a":1}}}}}', limits)).toThrow(JsonTooDeepError);
    // 50,000 levels: refused after a few characters, never handed to JSON.parse or class-transformer.
    expect(() => parseJsonBody('['.repeat(50_000) + ']'.repeat(50_000), limits)).toThrow(JsonTooDeepError);
  });

  it('counts values as containers plus commas and refuses more than the limit', () => {
    expect(() => checkJsonShape(`[${Array(20).fill(0).join(',')}]`, limits)).not.toThrow(); // 1 + 19
    expect(() => checkJsonShape(`[${Array(21).fill(0).join(',')}]`, limits)).toThrow(JsonTooManyValuesError);
    expect(() => checkJsonShape(`[${Array(20).fill('{}').join(',')}]`, limits)).toThrow(JsonTooManyValuesError);
  });

  it('ignores brackets and commas inside strings, escaped quotes included', () => {
    expect(() => checkJsonShape(JSON.stringify({ a: '[[[[[[,,,,,,,,,,,,,,,,,,,,,,,,]]]]]]' }), limits)).not.toThrow();
    expect(() => checkJsonShape(JSON.stringify({ a: 'say \\"[[[[[[\\"' }), limits)).not.toThrow();
    expect(parseJsonBody(JSON.stringify({ a: 'q"[[[[[[[[' }), limits)).toEqual({ a: 'q"[[[[[[[[' });
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses a %s key at any depth, as an unknown field', (key) => {
    const attempt = () => parseJsonBody(`{"a":[{"${key}":{"x":1}}]}`, limits);
    expect(attempt).toThrow(ForbiddenPropertyError);
    expect(attempt).toThrow(`property ${key} should not exist`);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('refuses malformed text; empty text is no body', () => {
    expect(() => parseJsonBody('{"a":', limits)).toThrow(MalformedJsonError);
    expect(parseJsonBody('', limits)).toBeUndefined();
    expect(parseJsonBody(' \r\n', limits)).toBeUndefined();
  });
});

describe('I-JSON (RFC 7493)', () => {
  const raw = ['{"customerId":"\\ud800"}', '{"customerId":"a\\udc00b"}', '{"\\ud83d":1}', '{"quantity":1e400}', '[-1e309]'];

  it.each(raw)('refuses %s, which JSON.parse accepts', (text) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(() => parseJsonBody(text, { maxDepth: 8, maxValues: 100 })).toThrow(NotIJsonError);
  });

  it('accepts surrogate pairs and large finite numbers', () => {
    expect(parseJsonBody('{"e":"\\ud83d\\ude00","n":1.7976931348623157e308}', { maxDepth: 8, maxValues: 100 })).toEqual({
      e: '\u{1F600}',
      n: 1.7976931348623157e308,
    });
  });
});

describe('repeated member names (I-JSON 2.3, SEC4-05)', () => {
  const wide = { maxDepth: 8, maxValues: 100 };
  const repeated = [
    '{"amountMinor":1,"amountMinor":2}',
    '{"a":{"b":1},"a":2}',
    '{"x":[{"b":1,"c":2,"b":3}]}',
    '{"a":1,"\\u0061":2}',
    '{ "a" : 1 , "a" : 1 }',
  ];

  it.each(repeated)('refuses %s, which JSON.parse accepts (last one wins)', (text) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(() => parseJsonBody(text, wide)).toThrow(NotIJsonError);
  });

  it('accepts one name in sibling and nested objects, names equal to string values, and escapes that differ', () => {
    const text = '{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a","d":["a","a"],"e\\"":1,"e":2,"k:":{"k":1}}';
    expect(parseJsonBody(text, wide)).toEqual(JSON.parse(text));
  });
});
