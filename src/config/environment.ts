// Each *.config.ts imports it too: a decorator records design:type (what implicit conversion reads) only once it is loaded.
import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync } from 'class-validator';

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigurationError';
  }
}

/** Where the service runs, as the checks of every namespace need it. */
export interface Deployment {
  production: boolean;
  /**
   * Why the dev defaults (dev tenant, dev keys, test switches) are refused here, for the message naming it;
   * undefined where they are allowed: the embedded store (a laptop) or NODE_ENV=test.
   */
  realStore: string | undefined;
}

/**
 * The dev tenant, the dev cipher key and the test switches are for the embedded store (a laptop) or tests,
 * never for a real database: NODE_ENV defaults to development, so it cannot be what guards them.
 */
export function deploymentOf(nodeEnv: string, mongoUri: string | undefined, mongoUriInvalid: boolean): Deployment {
  const production = nodeEnv === 'production';
  const devAllowed = !production && (!mongoUri || mongoUriInvalid || nodeEnv === 'test');
  const realStore = production ? 'NODE_ENV=production' : 'MONGODB_URI is set (outside NODE_ENV=test)';
  return { production, realStore: devAllowed ? undefined : realStore };
}

/**
 * A refused value as the error may show it: never a secret or key (their
 * length only), never the credentials of a URI (user and password).
 */
export function shown(name: string, value: string | undefined): string {
  if (value === undefined) return 'nothing';
  if (/KEY|SECRET|TOKEN|PASSWORD/.test(name)) return `${value.length} characters, not shown`;
  if (/_(URI|URL)$/.test(name) && value.includes('@')) {
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(value)?.[0] ?? '';
    return JSON.stringify(`${scheme}***${value.slice(value.lastIndexOf('@'))}`);
  }
  return JSON.stringify(value);
}

const BOOLEAN_STRINGS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false };

/** The variables a namespace declares: the properties its class-validator decorators name, in declaration order. */
export function variablesOf(section: abstract new () => object): string[] {
  const metadata = getMetadataStorage().getTargetValidationMetadatas(section, '', true, false);
  return [...new Set(metadata.map((entry) => entry.propertyName))];
}

/**
 * The raw environment and every problem found in it, so that one boot names
 * every bad variable. Each namespace reads its own class of variables; values
 * arrive as strings, and `enableImplicitConversion` turns them into numbers
 * before the checks run.
 */
export class Environment {
  readonly problems: string[] = [];
  /** Every variable of the classes read so far, in the order read. */
  readonly variables: string[] = [];
  private readonly invalid = new Set<string>();
  private readonly values: Record<string, string>;

  constructor(private readonly raw: NodeJS.ProcessEnv) {
    // An empty variable (`PORT=`) means "use the default", as in most twelve-factor apps.
    this.values = Object.fromEntries(
      Object.entries(raw).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
    );
  }

  read<T extends object>(section: new () => T): T {
    this.variables.push(...variablesOf(section));
    const env = plainToInstance(section, { ...this.values, ...this.booleans(section) }, { enableImplicitConversion: true });
    for (const error of validateSync(env, { skipMissingProperties: false })) {
      this.invalid.add(error.property);
      const constraints = Object.values(error.constraints ?? {}).join('; ');
      this.problems.push(`${error.property}: ${constraints} (got ${shown(error.property, this.raw[error.property])})`);
    }
    return env;
  }

  /** Whether a variable was refused by its own checks (its value is then not to be relied on). */
  isInvalid(name: string): boolean {
    return this.invalid.has(name);
  }

  /**
   * Implicit conversion would read "false" as true (a non-empty string), so the
   * variables declared `boolean` are parsed here.
   */
  private booleans(section: new () => object): Record<string, boolean> {
    const out: Record<string, boolean> = {};
    for (const name of variablesOf(section)) {
      const value = this.values[name];
      if (value === undefined || Reflect.getMetadata('design:type', section.prototype as object, name) !== Boolean) continue;
      const parsed = BOOLEAN_STRINGS[value.toLowerCase()];
      if (parsed === undefined) this.problems.push(`${name}: must be true or false (got ${JSON.stringify(value)})`);
      else out[name] = parsed;
    }
    return out;
  }
}
