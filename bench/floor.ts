import { join } from 'node:path';
import type { CreateLoopRequest, FloorMessage } from './floor-process.js';
import { startService, type ServiceOptions, type ServiceProcess } from './service.js';
import type { RawLoopResult } from './store.js';

/** The floor process (bench/floor-process.ts), started and measured like a service. */
export function startFloor(options: Omit<ServiceOptions, 'name' | 'script' | 'disableIdempotency'>): Promise<ServiceProcess> {
  return startService({
    ...options,
    name: 'floor (bare Fastify + driver)',
    script: join(options.root, 'dist', 'bench', 'floor-process.js'),
    disableIdempotency: false,
  });
}

/** Runs the create floor inside the floor process, so its CPU is the process's. */
export function floorCreateLoop(
  floor: ServiceProcess,
  workers: number,
  durationSeconds: number,
  keyPrefix: string,
): Promise<RawLoopResult> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: FloorMessage) => {
      floor.child.off('message', onMessage);
      floor.child.off('exit', onExit);
      if (message.type === 'create-loop-done') resolve(message.result);
      else reject(new Error(`floor process: ${message.message}`));
    };
    const onExit = () => {
      floor.child.off('message', onMessage);
      reject(new Error('floor process exited during the create loop'));
    };
    floor.child.on('message', onMessage);
    floor.child.once('exit', onExit);
    floor.child.send({ type: 'create-loop', workers, durationSeconds, keyPrefix } satisfies CreateLoopRequest);
  });
}
