import { execFile } from 'node:child_process';
import { join } from 'node:path';

/** How a command ended: its exit code (null when killed or not started), its output, how long it took. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command to its end and resolves with how it ended (never rejects: the caller asserts on `code`). */
export function runCommand(
  command: string,
  args: string[],
  { cwd, env = process.env, timeout = 120_000 }: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number },
): Promise<Ran> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 32 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr: error && code === null ? `${stderr}\n${error.message}` : stderr, ms: Date.now() - started });
    });
  });
}

/**
 * A workspace package packed into `into` as `npm publish` would ship it: what `npm run build` built
 * (--ignore-scripts: no rebuild of the workspace's dist/ under other tests). The tarball and its files.
 */
export async function packWorkspace(
  workspace: string,
  repo: string,
  into: string,
  run: typeof runCommand = runCommand,
): Promise<{ tarball: string; files: string[] }> {
  const pack = await run('npm', ['pack', '--json', '--ignore-scripts', '--workspace', workspace, '--pack-destination', into], {
    cwd: repo,
  });
  if (pack.code !== 0) throw new Error(`npm pack failed (${pack.code})\n${pack.stderr}`);
  const [entry] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return { tarball: join(into, entry.filename), files: entry.files.map((file) => file.path) };
}
