import type { INestApplication } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { guidanceFor, problem, PROBLEM_CONTENT_TYPE } from '@idempotent-orders/nest-idempotency';
import { PROBLEM_SCHEMA_REF } from './common/api-problem.decorator.js';
import { REQUIRED_SCOPE } from './auth/scopes.js';
import { InsufficientScopeError } from './auth/auth.errors.js';

/** OpenAPI at /docs (UI) and /docs/json, with the shared problem+json schema. */
export function setUpOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Idempotent orders API')
    .setDescription(
      'Creates paid orders exactly once per Idempotency-Key. Errors are RFC 9457 application/problem+json with a stable `code`.',
    )
    .setVersion('1')
    .addBearerAuth({
      type: 'http',
      scheme: 'bearer',
      // Not a JWT (the builder's default label): an opaque secret from API_KEYS, which names its tenant and scopes.
      bearerFormat: 'API key',
      description:
        'Your API key: `Authorization: Bearer <secret>`, one of API_KEYS (`tenant:secret:scope+scope`). ' +
        'The key names the tenant; a route needs the `orders` scope unless it says otherwise (403 `insufficient_scope`).',
    })
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components ??= {};
  document.components.schemas ??= {};
  document.components.schemas.Problem = {
    type: 'object',
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string', format: 'uri', description: 'Names the problem: the base URL (problemTypeBaseUrl) and the code' },
      title: { type: 'string', description: "The status's reason phrase" },
      status: { type: 'integer', description: 'The HTTP status, repeated' },
      detail: { type: 'string', description: 'What went wrong with this request, for a person' },
      code: { type: 'string', example: 'idempotency_key_in_use', description: 'Stable and machine-readable: branch on this' },
      // What the client may do next, by code (README, "What an error tells the client"). Absent only in
      // problem bodies stored and replayed byte for byte from before they existed.
      retryable: {
        type: 'boolean',
        description: 'Sending the same request again (same Idempotency-Key, same body) may succeed, after `Retry-After` when present',
      },
      reuseKey: {
        type: 'boolean',
        description: 'A retry must carry the same Idempotency-Key: under a new key the operation could run twice',
      },
      newKeySafe: {
        type: 'boolean',
        description:
          'The server knows nothing was executed for this request (a refused request, a 422 for another body): a new key cannot duplicate an effect. ' +
          'False for `idempotency_key_expired`, whose `Location` names what was already done',
      },
    },
  };
  documentScopes(document, scopesByOperation(app));
  addProblemExamples(document);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/json' });
}

type Operations = Record<string, { operationId?: string; security?: unknown[]; responses: Record<string, ProblemResponse> }>;
interface ProblemResponse {
  description?: string;
  content?: Record<string, { schema?: unknown; examples?: Record<string, { summary: string; value: unknown }> }>;
}

/**
 * The scope each authenticated operation needs, by Swagger's operationId
 * (`Controller_method`, before its version suffix), read from the same metadata the API key guard
 * reads (RequireScope on the method or its controller; `orders` otherwise).
 */
function scopesByOperation(app: INestApplication): Map<string, string> {
  const scopes = new Map<string, string>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const { metatype } of module.controllers.values()) {
      if (typeof metatype !== 'function') continue;
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const method of Object.getOwnPropertyNames(prototype)) {
        const handler = prototype[method];
        if (method === 'constructor' || typeof handler !== 'function') continue;
        const scope = (Reflect.getMetadata(REQUIRED_SCOPE, handler) ?? Reflect.getMetadata(REQUIRED_SCOPE, metatype) ?? 'orders') as string;
        scopes.set(`${metatype.name}_${method}`, scope);
      }
    }
  }
  return scopes;
}

/** Every operation behind an API key documents its 403: the key is known but lacks the operation's scope. */
function documentScopes(document: OpenAPIObject, scopes: Map<string, string>): void {
  for (const operations of Object.values(document.paths) as Operations[]) {
    for (const operation of Object.values(operations)) {
      if (!operation.security?.length || operation.responses['403']) continue;
      // Versioned routes get the version as a suffix (`Controller_method_1`).
      const id = operation.operationId ?? '';
      const scope = scopes.get(id) ?? scopes.get(id.replace(/_[^_]+$/, ''));
      if (!scope) throw new Error(`OpenAPI: no controller method for operation ${id}, so its scope is unknown`);
      operation.responses['403'] = {
        description: `\`${new InsufficientScopeError(scope).code}\`: the API key lacks the \`${scope}\` scope (API_KEYS \`tenant:secret:${scope}\`)`,
        content: { [PROBLEM_CONTENT_TYPE]: { schema: PROBLEM_SCHEMA_REF } },
      };
    }
  }
}

/**
 * One example per code a problem response names (its description lists
 * them in backquotes), built by the same function that writes the answers -
 * so each shows its real `type`, `status`, `code` and guidance fields rather
 * than one generic body. A backquoted word that is no problem code (a field,
 * a scope) is not an example.
 */
function addProblemExamples(document: OpenAPIObject): void {
  for (const operations of Object.values(document.paths) as Operations[]) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const content = response.content?.[PROBLEM_CONTENT_TYPE];
        if (!content || !response.description) continue;
        const examples: Record<string, { summary: string; value: unknown }> = {};
        for (const [, code, explained] of response.description.matchAll(/`([a-z][a-z0-9_]*)`(?::\s*((?:(?!;|\.\s+`).)+))?/g)) {
          if (!guidanceFor(code) || examples[code]) continue;
          const detail = sentence(explained?.trim() ? explained.replace(/`/g, '').trim() : code.replace(/_/g, ' '));
          examples[code] = { summary: code, value: problem(Number(status), code, detail) };
        }
        if (Object.keys(examples).length > 0) content.examples = examples;
      }
    }
  }
}

function sentence(text: string): string {
  const trimmed = text.replace(/[,.\s]+$/, '');
  return `${trimmed.charAt(0).toUpperCase()}${trimmed.slice(1)}.`;
}
