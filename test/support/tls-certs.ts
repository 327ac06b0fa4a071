/**
 * A throwaway certificate authority for TLS tests, made with the openssl
 * command line (Node can verify certificates but not issue them): a CA, a
 * server certificate for localhost (and 127.0.0.1) and a client certificate, in a temporary
 * directory, valid for a day. Nothing here is a secret worth keeping.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  caFile: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A second CA that signed nothing here: trusting it alone must fail the handshake. */
  otherCaFile: string;
  remove(): void;
}

/** openssl's path, or the reason to print when there is none. */
export function findOpenssl(): { binary: string } | { missing: string } {
  const found = spawnSync('openssl', ['version'], { encoding: 'utf8' });
  return !found.error && found.status === 0 ? { binary: 'openssl' } : { missing: 'openssl is not installed (apt-get install openssl)' };
}

export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'tls-test-'));
  const at = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => {
    const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${run.stderr}`);
  };
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) {
    openssl('req', '-x509', ...key, '-subj', `/CN=${ca}`, '-days', '1', '-keyout', at(`${ca}.key`), '-out', at(`${ca}.crt`));
  }
  const issue = (name: string, extensions: string) => {
    writeFileSync(at(`${name}.ext`), extensions);
    openssl('req', ...key, '-subj', `/CN=${name}`, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`));
    openssl(
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at('ca.crt'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      at(`${name}.ext`),
      '-out',
      at(`${name}.crt`),
    );
  };
  issue('server', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    caFile: at('ca.crt'),
    serverCert: at('server.crt'),
    serverKey: at('server.key'),
    clientCert: at('client.crt'),
    clientKey: at('client.key'),
    otherCaFile: at('other-ca.crt'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
