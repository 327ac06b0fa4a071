import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const sources = readdirSync(here).filter((name) => name.endsWith('.ts') && !name.endsWith('.spec.ts'));

// The kit is run against other teams' deployments, copied out of this
// repository on its own: it may only use Node and its own files.
describe('the conformance kit stands alone', () => {
  it('imports nothing but node: built-ins and its own folder', () => {
    const imports = sources.flatMap((name) =>
      [...readFileSync(`${here}${name}`, 'utf8').matchAll(/from '([^']+)'/g)].map((match) => `${name}: ${match[1]}`),
    );
    expect(sources.length).toBeGreaterThan(8);
    expect(imports.filter((line) => !/: (node:[a-z/]+|\.\/[a-z-]+\.js)$/.test(line))).toEqual([]);
  });
});
