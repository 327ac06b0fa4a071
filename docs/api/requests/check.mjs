// Compares one answer with what the docs show: its status, and each
// `field=value` or `header:name=value` given. Exits 1 with the difference.
import { readFileSync } from 'node:fs';

const [expected, status, answerFile, headersFile, ...checks] = process.argv.slice(2);
const problems = [];
if (status !== expected) problems.push(`status ${status}, the docs say ${expected}`);
const text = readFileSync(answerFile, 'utf8');
let body;
try {
  body = text ? JSON.parse(text) : undefined;
} catch {
  body = undefined;
}
const headers = Object.fromEntries(
  readFileSync(headersFile, 'utf8')
    .split(/\r?\n/)
    .filter((line) => line.includes(':'))
    .map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
);
for (const check of checks) {
  const at = check.indexOf('=');
  const [name, want] = [check.slice(0, at), check.slice(at + 1)];
  const got = name.startsWith('header:')
    ? headers[name.slice('header:'.length).toLowerCase()]
    : name.split('.').reduce((value, key) => (value === null || value === undefined ? undefined : value[key]), body);
  const shown = got === null ? 'null' : typeof got === 'object' ? JSON.stringify(got) : String(got);
  if (shown !== want) problems.push(`${name} is ${shown}, the docs say ${want}`);
}
if (problems.length > 0) {
  process.stderr.write(`MISMATCH: ${problems.join('; ')}\n`);
  process.exit(1);
}
