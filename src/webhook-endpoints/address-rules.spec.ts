import { describe, expect, it } from '@jest/globals';
import { ipLiteral, refusedAddress } from './address-rules.js';

/** The SSRF rules as pure functions: nothing here opens a connection. */
describe('refusedAddress: where an outgoing webhook never goes', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '169.254.0.1',
    '100.64.0.1',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456:789a::1',
    'ff02::1',
    '::ffff:127.0.0.1', // IPv4-mapped loopback
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe', // NAT64 of the metadata address
  ])('refuses %s', (address) => {
    expect(refusedAddress(address)).toMatch(/loopback, private, link-local or multicast/);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '192.169.0.1', '2606:4700:4700::1111', '2001:db8::1'])('allows %s', (address) => {
    expect(refusedAddress(address)).toBeNull();
  });

  it('refuses what is not an address', () => {
    expect(refusedAddress('localhost')).toMatch(/not an IP address/);
  });

  it('reads IP literals out of URLs, bracketed IPv6 included', () => {
    expect(ipLiteral(new URL('http://127.0.0.1:8080/x'))).toBe('127.0.0.1');
    expect(ipLiteral(new URL('http://[::1]/x'))).toBe('::1');
    expect(ipLiteral(new URL('http://[::ffff:127.0.0.1]/x'))).toBe('::ffff:7f00:1');
    // WHATWG URL parsing normalises these IPv4 spellings to the address they reach.
    expect(ipLiteral(new URL('http://2130706433/x'))).toBe('127.0.0.1');
    expect(ipLiteral(new URL('http://0x7f.1/x'))).toBe('127.0.0.1');
    expect(ipLiteral(new URL('https://merchant.example/x'))).toBeNull();
  });
});
