/**
 * The README's first-hour promises (issue 49 item 10): a one-file test
 * command that exists, and every flow script of docs/api/requests named.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(`${ROOT}README.md`, 'utf8');
const scripts = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> }).scripts;

describe('README.md: the first hour', () => {
  it('says how to run one test file, with a script that runs Jest the way the ESM tests need', () => {
    const oneFile = /npm run (test:[a-z]+) -- \S+\.spec\.ts/.exec(readme);
    expect(oneFile).not.toBeNull();
    expect(scripts[oneFile![1]]).toBe('node --experimental-vm-modules node_modules/jest/bin/jest.js');
  });

  it('names every flow script of docs/api/requests', () => {
    const flows = readdirSync(`${ROOT}docs/api/requests`)
      .filter((file) => file.endsWith('.sh') && file !== 'lib.sh')
      .map((file) => file.replace(/\.sh$/, ''));
    expect(flows.length).toBeGreaterThan(0);
    for (const flow of flows)
      expect({ flow, named: readme.includes(`\`${flow}\``) || readme.includes(`${flow}.sh`) }).toEqual({ flow, named: true });
  });

  it('keeps no stale timing table (figures a reader can reproduce, history in docs/benchmarks.md)', () => {
    expect(readme).not.toMatch(/\| step \| before \|/);
  });
});
