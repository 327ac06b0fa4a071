import { createHash } from 'node:crypto';

/**
 * A data subject as records keep it: a digest of tenant + subject id, so a
 * record never names a person in clear, yet an erasure can still find it.
 */
export function subjectDigest(tenant: string, subject: string): string {
  return createHash('sha256').update(`${tenant}\n${subject}`).digest('hex');
}
