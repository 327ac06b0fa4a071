/**
 * docker-compose.yml and the files it mounts, checked without a Docker
 * engine: MongoDB with auth (a keyfile between the members, users for the
 * clients), and the `observability` profile's Prometheus and Grafana wired to
 * the api's metrics, the alert rules and the dashboards of docs/dashboards.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const MEMBERS = ['mongo1', 'mongo2', 'mongo3'];

interface Service {
  image: string;
  command?: string | string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, unknown> | string[];
  profiles?: string[];
  ports?: string[];
}

const compose = parse(read('docker-compose.yml')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const services = compose.services;
const commandOf = (service: Service) => [service.command ?? []].flat().join(' ');
/** host path -> container path of a service's bind mounts (./...). */
const bindMounts = (service: Service) =>
  new Map(
    (service.volumes ?? [])
      .filter((volume) => volume.startsWith('./'))
      .map((volume) => {
        const [host, container] = volume.split(':');
        return [host.slice(2), container] as const;
      }),
  );

describe('docker-compose.yml: MongoDB with auth', () => {
  it('makes the keyfile once, into a volume every member mounts read-only, and starts the members after it', () => {
    const keyfile = services['mongo-keyfile'];
    expect(keyfile.entrypoint?.join(' ')).toMatch(/test -s \/keys\/keyfile \|\|.*chmod 400 \/keys\/keyfile.*chown 999:999/);
    expect(keyfile.volumes).toContain('mongo-keys:/keys');
    expect(compose.volumes).toHaveProperty('mongo-keys');
    for (const name of MEMBERS) {
      expect(commandOf(services[name])).toContain('--keyFile /keys/keyfile');
      expect(services[name].volumes).toContain('mongo-keys:/keys:ro');
      expect(services[name].depends_on).toEqual({ 'mongo-keyfile': { condition: 'service_completed_successfully' } });
      expect(services[name].environment?.MONGO_INITDB_ROOT_USERNAME).toBe('root');
      expect(services[name].environment?.MONGO_INITDB_ROOT_PASSWORD).toMatch(/^\$\{MONGO_ROOT_PASSWORD:\?.+\}$/);
    }
  });

  it('initiates the set as root and creates the service user, readWrite on its two databases only', () => {
    const init = commandOf(services['mongo-init']);
    // The root password by environment, read inside the script: never on mongosh's command line (ps, docker inspect).
    expect(init).not.toContain('MONGO_ROOT_PASSWORD}');
    expect(init).not.toMatch(/--password/);
    expect(init).toContain("db.getSiblingDB('admin').auth('root', process.env.MONGO_ROOT_PASSWORD)");
    expect(services['mongo-init'].environment?.MONGO_ROOT_PASSWORD).toMatch(/^\$\{MONGO_ROOT_PASSWORD:\?.+\}$/);
    expect(init).toContain("createUser({ user: 'orders', pwd: process.env.MONGO_APP_PASSWORD, roles })");
    expect(init).toContain("{ role: 'readWrite', db: 'orders' }");
    expect(init).toContain("{ role: 'readWrite', db: 'payment_simulator' }");
    expect(init).not.toMatch(/role: '(root|readWriteAnyDatabase|dbAdminAnyDatabase)'/);
    expect(services['mongo-init'].environment?.MONGO_APP_PASSWORD).toMatch(/^\$\{MONGO_APP_PASSWORD:\?.+\}$/);
  });

  it('connects the api as that user, never as root', () => {
    const uri = services.api.environment?.MONGODB_URI ?? '';
    expect(uri).toMatch(/^mongodb:\/\/orders:\$\{MONGO_APP_PASSWORD:\?[^}]+\}@mongo1:27017,mongo2:27017,mongo3:27017\//);
    expect(new URLSearchParams(uri.split('?').at(-1)).get('authSource')).toBe('admin');
    expect(JSON.stringify(services.api)).not.toContain('MONGO_ROOT_PASSWORD');
  });
});

describe('docker-compose.yml: the NATS broker', () => {
  it('gives nats-server its password by environment and a read-only config file, never on its command line', () => {
    const nats = services.nats;
    expect(commandOf(nats)).not.toMatch(/--pass|--user|NATS_PASSWORD/);
    expect(nats.environment?.NATS_PASSWORD).toMatch(/^\$\{NATS_PASSWORD:\?.+\}$/);
    const config = [...bindMounts(nats)].find(([host]) => host === 'ops/nats/nats.conf');
    expect(nats.volumes).toContain(`./ops/nats/nats.conf:${config?.[1]}:ro`);
    expect(commandOf(nats)).toContain(`-c ${config?.[1]}`);
    expect(read('ops/nats/nats.conf')).toMatch(/authorization\s*\{\s*user:\s*orders\s+password:\s*\$NATS_PASSWORD\s*\}/);
    expect(services.api.environment?.NATS_URL).toMatch(/^nats:\/\/orders:\$\{NATS_PASSWORD:\?[^}]+\}@nats:4222$/);
  });
});

describe('docker-compose.yml: the observability profile', () => {
  it('runs Prometheus and Grafana only in that profile, published on loopback only', () => {
    for (const name of ['prometheus', 'grafana']) {
      expect(services[name].profiles).toEqual(['observability']);
      for (const port of services[name].ports ?? []) expect(port).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('Prometheus scrapes the api metrics listener and loads the alert rules it mounts', () => {
    const mounts = bindMounts(services.prometheus);
    const config = parse(read('ops/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    expect(mounts.get('ops/prometheus/prometheus.yml')).toBe('/etc/prometheus/prometheus.yml');
    expect(config.rule_files.map((file) => [...mounts].find(([, container]) => container === file)?.[0])).toEqual(['ops/alerts.rules.yml']);
    expect(config.scrape_configs.flatMap((job) => job.static_configs.flatMap((target) => target.targets))).toEqual(['api:9464']);
    expect(services.api.environment?.METRICS_HOST).toBe('0.0.0.0');
  });

  it('Grafana provisions the compose Prometheus and every dashboard of docs/dashboards', () => {
    const mounts = bindMounts(services.grafana);
    expect(mounts.get('ops/grafana/provisioning')).toBe('/etc/grafana/provisioning');
    const datasources = parse(read('ops/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { type: string; url: string; isDefault: boolean }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true }),
    ]);
    const providers = parse(read('ops/grafana/provisioning/dashboards/dashboards.yml')) as { providers: { options: { path: string } }[] };
    const dashboardsPath = providers.providers[0].options.path;
    const hostFolder = [...mounts].find(([, container]) => container === dashboardsPath)?.[0];
    expect(hostFolder).toBe('docs/dashboards');
    const files = readdirSync(`${ROOT}${hostFolder}`).filter((file) => file.endsWith('.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const dashboard = JSON.parse(read(`${hostFolder}/${file}`)) as { uid: string; templating?: { list: { type: string }[] } };
      expect(typeof dashboard.uid).toBe('string');
      // Its queries name the datasource through a variable of type datasource, which the default fills.
      expect(dashboard.templating?.list.some((variable) => variable.type === 'datasource')).toBe(true);
    }
  });

  it("Grafana's admin login is the operator's, required from the environment, never Grafana's default", () => {
    expect(services.grafana.environment?.GF_SECURITY_ADMIN_PASSWORD).toMatch(/^\$\{GRAFANA_ADMIN_PASSWORD:\?.+\}$/);
  });

  it('mounts only files that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const host of bindMounts(service).keys())
        expect({ name, host, exists: existsSync(`${ROOT}${host}`) }).toEqual({ name, host, exists: true });
    }
  });
});
