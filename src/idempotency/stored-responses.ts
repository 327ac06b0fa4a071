import { Inject, Injectable } from '@nestjs/common';
import { problem, PROBLEM_CONTENT_TYPE } from '../common/problem.js';
import { idempotencyConfig, type IdempotencyConfig } from '../config/config.tokens.js';
import type { IdempotencyRecord, IdempotentResponse, StoredResponseDoc } from './idempotency-record.js';
import { ResponseCipher } from './response-cipher.js';

const ERASED_DETAIL = "The original response was erased at the data subject's request; the operation was not repeated.";

/** Stored responses in and out of their encrypted form; the only holder of the cipher. */
@Injectable()
export class StoredResponses {
  private readonly cipher: ResponseCipher;

  constructor(@Inject(idempotencyConfig.KEY) config: IdempotencyConfig) {
    this.cipher = new ResponseCipher(config.encryptionKey, config.decryptionKeys);
  }

  seal(recordId: string, schemaVersion: number, response: IdempotentResponse): StoredResponseDoc {
    return { status: response.status, headers: response.headers, body: this.cipher.seal(response.body, recordId), schemaVersion };
  }

  open(record: Pick<IdempotencyRecord, '_id' | 'response'>): IdempotentResponse {
    const stored = record.response!;
    return { status: stored.status, headers: stored.headers, body: this.cipher.open(stored.body, record._id) };
  }

  /** What replaces a stored response after erasure: a final 410, so a retry still never re-executes. */
  erased(record: IdempotencyRecord): StoredResponseDoc {
    return this.seal(record._id, record.schemaVersion, erasedResponse());
  }
}

/** The answer for a key whose data subject was erased. */
export function erasedResponse(): IdempotentResponse {
  const body = JSON.stringify(problem(410, 'response_erased', ERASED_DETAIL));
  return { status: 410, headers: { 'content-type': PROBLEM_CONTENT_TYPE }, body };
}
