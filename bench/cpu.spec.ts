import { describe, expect, it } from '@jest/globals';
import { cpuMeter, cpuMsFromStat, idleCpuRate, processCpuMs } from './cpu.js';

describe('service CPU per request', () => {
  it('reads utime + stime from /proc/<pid>/stat, also when the command name holds spaces and parentheses', () => {
    const stat = '4242 (node (main) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0 1000 0 0';
    expect(cpuMsFromStat(stat, 100)).toBe(3000);
  });

  it('measures this process, and gives null for a process that does not exist', () => {
    const meter = cpuMeter(process.pid);
    let spin = 0;
    for (const end = Date.now() + 60; Date.now() < end;) spin++;
    expect(spin).toBeGreaterThan(0);
    expect(meter.perRequest(2)).toBeGreaterThan(0);
    expect(processCpuMs(2 ** 22 + 1)).toBeNull();
    expect(cpuMeter(undefined).perRequest(1)).toBeNull();
  });
});

describe('idle CPU', () => {
  it('is left out of the CPU per request', async () => {
    const busy = cpuMeter(process.pid, 0);
    const net = cpuMeter(process.pid, 1e6);
    for (const end = Date.now() + 30; Date.now() < end;);
    expect(busy.perRequest(1)).toBeGreaterThan(0);
    expect(net.perRequest(1)).toBe(0);
    await expect(idleCpuRate(process.pid, 50)).resolves.toBeGreaterThanOrEqual(0);
  });
});
