// Issue 48 item 2: the tarball stands alone. A reader of the installed package (node_modules, or the npm
// page) has the packed files and nothing of this repository, so every relative link in the packed
// Markdown (README.md, docs/**) must resolve to a file in the tarball, and a `#fragment` to a heading of
// that file. The package is packed as `npm publish` would ship it and its Markdown is read from the
// extracted tarball, not from the working tree.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packWorkspace, runCommand } from '../support/run-command.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PACKAGES = ['@idempotent-orders/nest-idempotency', '@idempotent-orders/idempotency-conformance'];

/** GitHub's heading anchors: lowercase, punctuation other than `-` and `_` dropped, each space a `-`. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsIn(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1])));
}

/** Every `[text](target)` outside code blocks whose target is relative (no scheme, not mailto). */
export function relativeLinks(markdown: string): string[] {
  const withoutCode = markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
  return [...withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1])
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

describe.each(PACKAGES)('the packed %s: every relative link in its Markdown resolves inside the tarball', (workspace) => {
  let work: string;
  let root: string;
  let markdown: string[];

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'tarball-links-'));
    const { tarball, files } = await packWorkspace(workspace, REPO, work);
    const untar = await runCommand('tar', ['-xzf', tarball, '-C', work], { cwd: work });
    if (untar.code !== 0) throw new Error(`tar failed: ${untar.stderr}`);
    root = join(work, 'package');
    markdown = files.filter((file) => file.endsWith('.md'));
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('packs its README, and every link of every packed Markdown file names a packed file (and a heading of it)', () => {
    expect(markdown).toContain('README.md');
    const broken: string[] = [];
    let checked = 0;
    for (const file of markdown) {
      for (const link of relativeLinks(readFileSync(join(root, file), 'utf8'))) {
        checked++;
        const [path, fragment] = link.split('#');
        const target = path === '' ? join(root, file) : normalize(join(root, dirname(file), decodeURIComponent(path)));
        const inside = !relative(root, target).startsWith('..');
        if (!inside || !existsSync(target)) {
          broken.push(`${file}: ${link} (${inside ? 'not in the tarball' : 'outside the package'})`);
          continue;
        }
        if (fragment && statSync(target).isFile() && !anchorsIn(readFileSync(target, 'utf8')).has(fragment)) {
          broken.push(`${file}: ${link} (no heading #${fragment} in ${relative(root, target)})`);
        }
      }
    }
    expect(broken).toEqual([]);
    if (workspace.endsWith('nest-idempotency')) expect(checked).toBeGreaterThan(5);
  });
});
