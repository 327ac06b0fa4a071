// Keeps the deployment files honest without a Docker engine: docker-compose.yml,
// Dockerfile and .env.example are checked against each other and against the
// variables src/config declares (one class of them per namespace), the one list of settings.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parse } from 'yaml';
import { environmentVariables } from '../../src/config/configuration.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** Property names of every namespace's variables class, e.g. `PORT: number = 3000;` or `MONGODB_URI?: string;`. */
function declaredVariables(): string[] {
  return environmentVariables();
}

const MIN_MONGO = 8_000_012; // 8.0.12 fixes CVE-2025-10060
const MEMBERS = ['mongo1', 'mongo2', 'mongo3'];

describe('deployment files', () => {
  const composeText = read('docker-compose.yml');
  const compose = parse(composeText);
  const services = compose.services;
  const variables = declaredVariables();

  it('reads the settings from configuration.ts', () => {
    expect(variables.length).toBeGreaterThan(20);
    expect(variables).toEqual(expect.arrayContaining(['NODE_ENV', 'MONGODB_URI', 'API_KEYS', 'IDEMPOTENCY_ENCRYPTION_KEY']));
  });

  it('runs a 3-member replica set, initiated once, on a patched MongoDB', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining([...MEMBERS, 'mongo-init', 'api']));
    expect(compose.version).toBeUndefined();
    for (const name of MEMBERS) {
      const command = [services[name].command].flat().join(' ');
      expect(command).toContain('--replSet rs0');
      expect(command).toContain('--bind_ip_all');
      expect(services[name].healthcheck?.test).toBeDefined();
    }
    for (const name of [...MEMBERS, 'mongo-init']) {
      const tag = /^mongo:(\d+)\.(\d+)\.(\d+)$/.exec(services[name].image);
      expect(tag).not.toBeNull();
      const [major, minor, patch] = tag!.slice(1).map(Number);
      expect(major * 1e6 + minor * 1e3 + patch).toBeGreaterThanOrEqual(MIN_MONGO);
    }
    expect([services['mongo-init'].command].flat().join(' ')).toContain('rs.initiate');
  });

  it('points the api at every member and starts it only after the set is initiated', () => {
    const api = services.api;
    // Several hosts: not a WHATWG URL, so split it by hand.
    const [, user, hosts, query] = /^mongodb:\/\/(?:([^:@/]+):[^@/]+@)?([^/?]+)\/[^?]*\?(.*)$/.exec(api.environment.MONGODB_URI) ?? [];
    expect(hosts?.split(',').sort()).toEqual(MEMBERS.map((member) => `${member}:27017`));
    expect(new URLSearchParams(query).get('replicaSet')).toBe('rs0');
    // MongoDB with auth: the service logs in as its own user (made by mongo-init), never as root.
    expect(user).toBe('orders');
    expect(new URLSearchParams(query).get('authSource')).toBe('admin');
    expect([services['mongo-init'].command].flat().join(' ')).toMatch(/createUser\(\{ user: 'orders'/);
    expect(api.environment.NODE_ENV).toBe('production');
    expect(api.depends_on['mongo-init']).toEqual({ condition: 'service_completed_successfully' });
    for (const required of ['API_KEYS', 'IDEMPOTENCY_ENCRYPTION_KEY']) {
      expect(api.environment[required]).toMatch(new RegExp(`^\\$\\{${required}:\\?.+\\}$`));
    }
    expect(JSON.stringify(api.healthcheck.test)).toContain('/health/ready');
  });

  it('interpolates and sets only variables that configuration.ts declares, besides the store passwords compose itself uses', () => {
    // Made by the operator for compose alone (the members' root, the service's store user): the service reads neither,
    // it gets the second only inside MONGODB_URI.
    const composeOnly = ['MONGO_ROOT_PASSWORD', 'MONGO_APP_PASSWORD', 'GRAFANA_ADMIN_PASSWORD', 'NATS_PASSWORD'];
    const referenced = [...composeText.matchAll(/(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((match) => match[1]);
    expect(referenced.length).toBeGreaterThan(0);
    expect(referenced.filter((name) => !variables.includes(name) && !composeOnly.includes(name))).toEqual([]);
    expect(composeOnly.filter((name) => name in services.api.environment)).toEqual([]);
    expect(Object.keys(services.api.environment).filter((name) => !variables.includes(name))).toEqual([]);
  });

  it('documents every variable in .env.example', () => {
    const example = read('.env.example');
    const missing = variables.filter((name) => !new RegExp(`^#?\\s*${name}=`, 'm').test(example));
    expect(missing).toEqual([]);
  });

  it('builds an image that runs dist/src/main.js as a non-root user', () => {
    const dockerfile = read('Dockerfile');
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((match) => match[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(['root', '0']).not.toContain(users.at(-1)!.split(':')[0]);
    const cmd = [...dockerfile.matchAll(/^CMD\s+(.+)$/gm)].at(-1);
    expect(JSON.parse(cmd![1])).toEqual(['node', 'dist/src/main.js']);
  });

  it('ships every workspace package the service depends on: its package.json before npm ci, its dist after the build', () => {
    const dockerfile = read('Dockerfile');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('FROM '));
    const manifest = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const workspaces = Object.keys(manifest.dependencies).filter((name) => name.startsWith('@idempotent-orders/'));
    expect(workspaces).toEqual(['@idempotent-orders/nest-idempotency']);
    for (const name of workspaces) {
      const folder = `packages/${name.split('/')[1]}`;
      const copyManifest = runtime.indexOf(`COPY ${folder}/package.json ${folder}/`);
      expect(copyManifest).toBeGreaterThan(-1);
      expect(copyManifest).toBeLessThan(runtime.indexOf('RUN npm ci'));
      expect(runtime).toContain(`COPY --from=build /app/${folder}/dist ${folder}/dist`);
    }
  });
});

describe('hosted CI workflow', () => {
  const workflow = parse(read('.github/workflows/ci.yml'));
  const jobs = Object.values(workflow.jobs) as {
    steps: { run?: string; env?: Record<string, string>; with?: Record<string, unknown> }[];
    env?: Record<string, string>;
  }[];
  const runs = (job: (typeof jobs)[number]) => job.steps.map((step) => step.run ?? '').join('\n');

  it('runs npm test on real MongoDB in every job: a downloaded mongod, a replica set by URI, Testcontainers', () => {
    expect(jobs).toHaveLength(3);
    for (const job of jobs) {
      expect(runs(job)).toMatch(/^npm ci\b/m);
      expect(runs(job)).toMatch(/^npm test$/m);
      expect(job.steps.find((step) => step.with?.['node-version'])?.with?.['node-version']).toBeGreaterThanOrEqual(22);
    }
    const [download, uri, container] = jobs;
    expect(download.env?.MONGOMS_VERSION).toMatch(/^8\.0\.(1[2-9]|[2-9]\d)$/);
    expect(runs(download)).toContain('MongoBinary.getPath');
    expect(uri.steps.find((step) => step.run === 'npm test')?.env?.MONGODB_URI).toMatch(/replicaSet=rs0/);
    expect(runs(uri)).toMatch(/mongo:8\.0\.\d+ --replSet rs0/);
    expect(container.steps.find((step) => step.run === 'npm test')?.env?.MONGO_BACKEND).toBe('container');
  });

  it('runs the gate on every push and the soak tier nightly, with its own timeout (issue 33)', () => {
    expect(workflow.on).toHaveProperty('push');
    const soak = parse(read('.github/workflows/soak.yml'));
    expect(soak.on.schedule[0].cron).toBeDefined();
    const soakJobs = Object.values(soak.jobs) as { 'timeout-minutes': number; steps: { run?: string }[] }[];
    expect(soakJobs.map((job) => job.steps.some((step) => step.run === 'npm run test:soak'))).toEqual([true]);
    expect(soakJobs[0]['timeout-minutes']).toBeGreaterThan(30);
    expect(read('.ci/run')).toMatch(/^npm test$[\s\S]*^npm run test:soak /m);
  });

  it('npm test leaves the soak folders out, by folder (issue 33)', async () => {
    const require = createRequire(import.meta.url);
    const previous = process.env.TEST_TIER;
    process.env.TEST_TIER = 'gate';
    try {
      const path = require.resolve('../../jest.config.cjs');
      delete require.cache[path];
      const gate = require(path) as { projects: { displayName: string; testPathIgnorePatterns?: string[] }[] };
      expect(gate.projects.map((project) => project.displayName)).toEqual(['unit', 'e2e']);
      expect(gate.projects[1].testPathIgnorePatterns).toEqual(['<rootDir>/test/process/', '<rootDir>/test/packaging/']);
    } finally {
      if (previous === undefined) delete process.env.TEST_TIER;
      else process.env.TEST_TIER = previous;
    }
    expect(JSON.parse(read('package.json')).scripts.test).toMatch(/MODEL_SEED=\$\{MODEL_SEED:-\d+\}.* TEST_TIER=gate /);
  });

  it('uses the same patched image as the container backend and compose', async () => {
    const { CONTAINER_IMAGE } = await import('../../src/database/embedded-mongo.js');
    expect(read('.github/workflows/ci.yml')).toContain(CONTAINER_IMAGE);
    expect(parse(read('docker-compose.yml')).services.mongo1.image).toBe(CONTAINER_IMAGE);
  });

  it('ships no test-only store in production dependencies, and CI scans those for advisories (security review 2, #18)', () => {
    const pkg = JSON.parse(read('package.json'));
    const lock = JSON.parse(read('package-lock.json'));
    // The embedded store is for `npm start` in a checkout (dev dependencies installed); production refuses to run without MONGODB_URI.
    expect(Object.keys(pkg.dependencies)).not.toContain('mongodb-memory-server-core');
    expect(pkg.devDependencies['mongodb-memory-server-core']).toBeDefined();
    expect(lock.packages['node_modules/mongodb-memory-server-core'].dev).toBe(true);
    for (const dependency of ['follow-redirects', 'https-proxy-agent', 'tar-stream', 'yauzl']) {
      expect(lock.packages[`node_modules/${dependency}`].dev).toBe(true);
    }
    // Only ever loaded on demand, so a production install without it still starts.
    const embedded = read('src/database/embedded-mongo.ts');
    expect(embedded).not.toMatch(/^import [^;]*'mongodb-memory-server-core'/m);
    expect(read('.ci/run')).toMatch(/^node \.ci\/npm-audit\.mjs$/m);
    expect(read('.ci/npm-audit.mjs')).toContain("'audit', '--omit=dev'");
  });
});
