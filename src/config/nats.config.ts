import 'reflect-metadata';
import { accessSync, constants } from 'node:fs';
import { IsInt, IsOptional, Matches, Max, Min } from 'class-validator';

/** The broker the outbox relay publishes to (NATS JetStream). Unset: events stay in-process. */
export class NatsEnvironment {
  // nats://host:4222, or tls://host:4222 for TLS; credentials may ride in the URL (user:password@, or token@).
  // A cluster's seeds, comma-separated (nats://a:4222,nats://b:4222): boot takes the first that answers.
  @IsOptional()
  @Matches(/^(nats|tls):\/\/[^\s,]+(,(nats|tls):\/\/[^\s,]+)*$/, { message: 'must be nats:// or tls:// URLs, comma-separated' })
  NATS_URL?: string;

  // A NATS .creds file (JWT + nkey seed), the usual credentials of a managed NATS account.
  @IsOptional()
  @Matches(/^\S+$/, { message: 'must be a file path' })
  NATS_CREDS_FILE?: string;

  // TLS (a tls:// NATS_URL): the CA that signed the server's certificate, when it is not one Node trusts (PEM).
  @IsOptional()
  @Matches(/^\S+$/, { message: 'must be a file path' })
  NATS_TLS_CA_FILE?: string;

  // Mutual TLS: this service's certificate and its key (PEM), for a server that verifies clients.
  @IsOptional()
  @Matches(/^\S+$/, { message: 'must be a file path' })
  NATS_TLS_CERT_FILE?: string;

  @IsOptional()
  @Matches(/^\S+$/, { message: 'must be a file path' })
  NATS_TLS_KEY_FILE?: string;

  @Matches(/^[A-Za-z0-9_-]{1,64}$/, { message: 'must be 1-64 letters, digits, _ or -' })
  NATS_STREAM: string = 'ORDER_EVENTS';

  // 1 for a single server; 3 on a cluster (docs/scaling.md: why production wants it).
  @IsInt()
  @Min(1)
  @Max(5)
  NATS_STREAM_REPLICAS: number = 1;

  // How long boot waits for the broker before it starts degraded (creates go on; the outbox buffers).
  @IsInt()
  @Min(0)
  @Max(120000)
  NATS_CONNECT_WAIT_MS: number = 5000;
}

export interface NatsSettings {
  /** Unset: no broker, events go to the in-process bus. */
  url?: string;
  /** `host:port` of each seed of NATS_URL, credentials removed (what the client dials). */
  servers: string[];
  /** The seeds as logs and the boot banner show them: `host:port`, comma-separated. */
  server?: string;
  tls: boolean;
  /** PEM files for TLS: a private CA, and this service's certificate and key for mutual TLS. */
  tlsFiles: { caFile?: string; certFile?: string; keyFile?: string };
  user?: string;
  pass?: string;
  token?: string;
  credsFile?: string;
  stream: string;
  replicas: number;
  connectWaitMs: number;
}

export function natsSettings(env: NatsEnvironment, problems: string[]): NatsSettings {
  const tlsFiles = {
    ...(env.NATS_TLS_CA_FILE ? { caFile: env.NATS_TLS_CA_FILE } : {}),
    ...(env.NATS_TLS_CERT_FILE ? { certFile: env.NATS_TLS_CERT_FILE } : {}),
    ...(env.NATS_TLS_KEY_FILE ? { keyFile: env.NATS_TLS_KEY_FILE } : {}),
  };
  // Read when the broker connects, long after boot said it started: a file it cannot read is refused here, by name.
  for (const [name, path] of [
    ['NATS_CREDS_FILE', env.NATS_CREDS_FILE],
    ['NATS_TLS_CA_FILE', tlsFiles.caFile],
    ['NATS_TLS_CERT_FILE', tlsFiles.certFile],
    ['NATS_TLS_KEY_FILE', tlsFiles.keyFile],
  ] as const) {
    if (path !== undefined && !readable(path)) problems.push(`${name}: cannot read ${path}`);
  }
  if (Boolean(tlsFiles.certFile) !== Boolean(tlsFiles.keyFile)) {
    problems.push('NATS_TLS_CERT_FILE, NATS_TLS_KEY_FILE: set both (mutual TLS) or neither');
  }
  const base = {
    servers: [],
    tls: false,
    tlsFiles,
    credsFile: env.NATS_CREDS_FILE,
    stream: env.NATS_STREAM,
    replicas: env.NATS_STREAM_REPLICAS,
    connectWaitMs: env.NATS_CONNECT_WAIT_MS,
  };
  if (!env.NATS_URL) return base;
  let urls: URL[];
  try {
    urls = env.NATS_URL.split(',').map((seed) => new URL(seed));
  } catch {
    // Said once: the format check above may have named it already (an empty seed, a space).
    if (!problems.some((problem) => problem.startsWith('NATS_URL:'))) problems.push('NATS_URL: is not a URL');
    return base;
  }
  const [url] = urls;
  // One client, one TLS setting and one identity for every seed: a list that mixes them would connect as
  // whichever seed answered first.
  if (urls.some((seed) => seed.protocol !== url.protocol || seed.username !== url.username || seed.password !== url.password)) {
    problems.push('NATS_URL: every seed needs the same scheme and credentials');
    return base;
  }
  if (url.protocol !== 'tls:' && Object.keys(tlsFiles).length > 0) problems.push('NATS_TLS_*: need a tls:// NATS_URL');
  const user = decodeURIComponent(url.username) || undefined;
  const pass = decodeURIComponent(url.password) || undefined;
  const servers = urls.map((seed) => `${seed.hostname}:${seed.port || '4222'}`);
  return {
    ...base,
    url: env.NATS_URL,
    servers,
    server: servers.join(','),
    tls: url.protocol === 'tls:',
    // nats://secret@host is a token, nats://user:password@host a user (NATS's own URL convention).
    ...(pass === undefined ? { token: user } : { user, pass }),
  };
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
