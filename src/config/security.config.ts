import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** Who may call the API (API keys, their tenants and scopes) and how often. */
export class SecurityEnvironment {
  @IsOptional()
  @IsString()
  API_KEYS?: string;

  @IsInt()
  @Min(0)
  @Max(100000)
  RATE_LIMIT_PER_KEY_PER_MINUTE: number = 60;

  @IsInt()
  @Min(0)
  @Max(1000000)
  RATE_LIMIT_PER_TENANT_PER_MINUTE: number = 6000;
}

export interface SecuritySettings {
  apiKeys: ApiKeyEntry[];
  usingDevApiKey: boolean;
  rateLimitPerKeyPerMinute: number;
  rateLimitPerTenantPerMinute: number;
}

/** What an API key may do: create and read orders, administer idempotency keys, erase customers. */
export const API_KEY_SCOPES = ['orders', 'admin', 'privacy'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export interface ApiKeyEntry {
  tenant: string;
  secret: string;
  /** Logged in audit lines instead of the secret: `<tenant>#<n>`, the tenant's n-th key in API_KEYS. */
  id: string;
  scopes: ApiKeyScope[];
}

/** Documented in README and .env.example; only with the embedded store or NODE_ENV=test, refused with a real store even if set. */
export const DEV_TENANT = 'dev';
export const DEV_API_SECRET = 'dev-secret-change-me';

export function securitySettings(env: SecurityEnvironment, deployment: Deployment, problems: string[]): SecuritySettings {
  if (env.RATE_LIMIT_PER_KEY_PER_MINUTE > 0 && env.RATE_LIMIT_PER_TENANT_PER_MINUTE === 0) {
    problems.push(
      'RATE_LIMIT_PER_KEY_PER_MINUTE: needs RATE_LIMIT_PER_TENANT_PER_MINUTE > 0 (the tenant limit bounds how many keys are tracked)',
    );
  }
  const apiKeys = parseApiKeys(env.API_KEYS, deployment.realStore, problems);
  return {
    apiKeys: apiKeys.entries,
    usingDevApiKey: apiKeys.dev,
    rateLimitPerKeyPerMinute: env.RATE_LIMIT_PER_KEY_PER_MINUTE,
    rateLimitPerTenantPerMinute: env.RATE_LIMIT_PER_TENANT_PER_MINUTE,
  };
}

/**
 * `tenant:secret` (scope `orders`) or `tenant:secret:scope+scope`: with two or
 * more colons, the part after the last one is the scope list, so a secret that
 * contains a colon must name its scopes. `realStore`: why the dev defaults are
 * refused here (undefined: they are allowed).
 */
function parseApiKeys(value: string | undefined, realStore: string | undefined, problems: string[]) {
  if (!value) {
    if (realStore) problems.push(`API_KEYS: required when ${realStore}`);
    return { entries: [{ tenant: DEV_TENANT, secret: DEV_API_SECRET, id: `${DEV_TENANT}#1`, scopes: [...API_KEY_SCOPES] }], dev: true };
  }
  const entries: ApiKeyEntry[] = [];
  for (const pair of value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const separator = pair.indexOf(':');
    const tenant = pair.slice(0, separator);
    const rest = pair.slice(separator + 1);
    const scopeSeparator = rest.lastIndexOf(':');
    const secret = scopeSeparator >= 0 ? rest.slice(0, scopeSeparator) : rest;
    const scopes = scopeSeparator >= 0 ? rest.slice(scopeSeparator + 1).split('+') : ['orders'];
    if (separator < 1 || !/^[A-Za-z0-9_-]{1,64}$/.test(tenant)) {
      problems.push('API_KEYS: each entry must be tenant:secret[:scopes] with a tenant of 1-64 letters, digits, _ or -');
    } else if (secret.length < 16) {
      problems.push(`API_KEYS: the secret of tenant "${tenant}" must be at least 16 characters`);
    } else if (!scopes.every((scope) => (API_KEY_SCOPES as readonly string[]).includes(scope))) {
      problems.push(
        `API_KEYS: a key of tenant "${tenant}" names an unknown scope; scopes are ${API_KEY_SCOPES.join(', ')}, joined by + (tenant:secret:orders+admin)`,
      );
    } else if (realStore && secret === DEV_API_SECRET) {
      problems.push(`API_KEYS: the published dev secret is refused when ${realStore} (tenant "${tenant}")`);
    } else if (entries.some((entry) => entry.secret === secret)) {
      // The registry would take the first match: the second tenant's clients would act as the first tenant.
      const first = entries.find((entry) => entry.secret === secret)!.tenant;
      problems.push(`API_KEYS: tenants "${first}" and "${tenant}" have the same secret; every secret must be unique`);
    } else {
      const n = entries.filter((entry) => entry.tenant === tenant).length + 1;
      entries.push({ tenant, secret, id: `${tenant}#${n}`, scopes: [...new Set(scopes)] as ApiKeyScope[] });
    }
  }
  if (entries.length === 0 && problems.length === 0) problems.push('API_KEYS: no tenant:secret pair found');
  return { entries, dev: false };
}
