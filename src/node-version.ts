/**
 * The service runs on Node 24 or later (the current LTS; `.nvmrc` says 24,
 * package.json "engines" says >= 24): it uses Node 24's APIs and its Jest
 * ESM support, and an older Node fails later in ways that name nothing. So
 * main.ts imports this first, before anything else is evaluated, and an
 * older Node gets one line and exit 1.
 */
export const MINIMUM_NODE_MAJOR = 24;

/** The refusal for `version` (process.versions.node), or null when it is new enough. */
export function nodeVersionRefusal(version: string): string | null {
  const major = Number(version.split('.')[0]);
  if (Number.isInteger(major) && major >= MINIMUM_NODE_MAJOR) return null;
  return (
    `Node ${version} is too old: this service needs Node ${MINIMUM_NODE_MAJOR} or later ` +
    `(nvm install ${MINIMUM_NODE_MAJOR} && nvm use ${MINIMUM_NODE_MAJOR}, or fnm use ${MINIMUM_NODE_MAJOR}; .nvmrc names it)\n`
  );
}

/** Exits with the refusal on an old Node; a no-op otherwise. */
export function refuseOldNode(version = process.versions.node): void {
  const refusal = nodeVersionRefusal(version);
  if (refusal === null) return;
  process.stderr.write(refusal);
  process.exit(1);
}

// NODE_VERSION_OVERRIDE lets a test see the refusal of a real process without an old Node installed.
refuseOldNode(process.env.NODE_VERSION_OVERRIDE || process.versions.node);
