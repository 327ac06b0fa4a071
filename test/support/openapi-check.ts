import { dereference } from '@readme/openapi-parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { OpenAPIV3 } from 'openapi-types';

type Schema = OpenAPIV3.SchemaObject;

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * Schemas that stay open on purpose: RFC 9457 lets a problem carry extension
 * members (`errors`, `orderId`, `details`), so Problem documents the members
 * every problem has, not all it may have.
 */
const OPEN_SCHEMAS = new Set(['Problem']);

/**
 * Refuses undocumented members in a copy of the document: OpenAPI allows
 * them by default, which would let a field the code returns but the schema
 * omits pass unseen. Done before dereferencing, while schemas still have
 * their names. Not a converter: Ajv reads OpenAPI 3.0 schemas as they are,
 * `nullable` included (a built-in Ajv keyword); only `example` needs
 * declaring, as the annotation it is.
 */
function closeObjects(schema: Schema | OpenAPIV3.ReferenceObject | undefined): void {
  if (!schema || '$ref' in schema) return;
  if (schema.type === 'object' && schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
  for (const child of Object.values(schema.properties ?? {})) closeObjects(child);
  if (schema.type === 'array') closeObjects(schema.items);
  for (const child of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) closeObjects(child);
}

export interface ResponseCheck {
  /** Problems with `body` as the answer to `method path` with this status and content type; [] when it matches. */
  errors(method: string, path: string, status: number, contentType: string, body: unknown): string[];
  /** Every `METHOD path status` checked so far. */
  readonly checked: Set<string>;
}

/** Compiles each documented response schema of `document` (closed as above) with Ajv, on first use. */
export async function responseCheck(document: OpenAPIV3.Document): Promise<ResponseCheck> {
  const closed = structuredClone(document);
  for (const [name, schema] of Object.entries(closed.components?.schemas ?? {})) {
    if (!OPEN_SCHEMAS.has(name)) closeObjects(schema);
  }
  for (const operations of Object.values(closed.paths)) {
    for (const method of HTTP_METHODS) {
      for (const response of Object.values(operations?.[method]?.responses ?? {})) {
        for (const media of Object.values((response as OpenAPIV3.ResponseObject).content ?? {})) closeObjects(media.schema);
      }
    }
  }
  const resolved = await dereference(closed);
  const ajv = new Ajv({ allErrors: true, strict: true });
  ajv.addKeyword('example');
  addFormats.default(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const checked = new Set<string>();

  return {
    checked,
    errors(method, path, status, contentType, body) {
      const operation = resolved.paths[path]?.[method.toLowerCase() as OpenAPIV3.HttpMethods];
      if (!operation) return [`${method} ${path} is not documented`];
      const response = operation.responses[String(status)] as OpenAPIV3.ResponseObject | undefined;
      if (!response) return [`${method} ${path} does not document status ${status}`];
      const media = response.content?.[contentType];
      if (!media?.schema) return [`${method} ${path} ${status} documents no ${contentType} schema`];
      const id = `${method} ${path} ${status} ${contentType}`;
      let validate = compiled.get(id);
      if (!validate) {
        validate = ajv.compile(media.schema);
        compiled.set(id, validate);
      }
      checked.add(`${method} ${path} ${status}`);
      if (validate(body)) return [];
      return (validate.errors ?? []).map((error) => `${id}: body${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`);
    },
  };
}
