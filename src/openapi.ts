import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';

/** OpenAPI at /docs (UI) and /docs/json, with the shared problem+json schema. */
export function setUpOpenApi(app: INestApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Idempotent orders API')
    .setDescription(
      'Creates paid orders exactly once per Idempotency-Key. Errors are RFC 9457 application/problem+json with a stable `code`.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Your API key' })
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components ??= {};
  document.components.schemas ??= {};
  document.components.schemas.Problem = {
    type: 'object',
    required: ['type', 'title', 'status', 'detail', 'code'],
    properties: {
      type: { type: 'string', format: 'uri' },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      code: { type: 'string', example: 'idempotency_key_in_use' },
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
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/json' });
}
