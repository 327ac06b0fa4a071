import { BlockList, isIP } from 'node:net';

/**
 * The addresses an outgoing webhook never reaches (SSRF): this host, the
 * private networks behind it, link-local (169.254.0.0/16: the cloud metadata
 * service), multicast, and their IPv6 equivalents. An IPv4-mapped IPv6
 * address (::ffff:a.b.c.d) is judged by the IPv4 rules (BlockList checks it
 * as the IPv4 address it reaches); NAT64 (64:ff9b::/96) is refused whole.
 * Node's BlockList does the prefix matching.
 */
const REFUSED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv6');
}

/** Why `address` may not be reached, or null when it may. Anything that is not an IP address is refused. */
export function refusedAddress(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  return REFUSED.check(address, family === 4 ? 'ipv4' : 'ipv6')
    ? `${address} is a loopback, private, link-local or multicast address`
    : null;
}

/** The URL's host as an IP address when it is one (`[::1]` without its brackets), else null. */
export function ipLiteral(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

/** One resolved address, as `dns.lookup(host, { all: true })` gives them. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name (dns.lookup in production; a stub in tests, which never reach another address). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;
