// A MongoDB server of the test's own, whose process the test can stop or
// freeze with SIGSTOP (a server that accepts connections and never answers -
// what a hung VM, a stuck disk or a long GC pause look like from the client).
// Never the run's shared server. The same resolver as everything else: a real
// mongod when one is on this machine, else the serialized emulator.
import { resolveMongoBackend, type MongoBackend } from '../../src/database/embedded-mongo.js';

export interface PrivateStore {
  readonly uri: string;
  readonly pid: number;
  readonly description: string;
  freeze(): void;
  thaw(): void;
  stop(): Promise<void>;
}

export async function startPrivateStore(): Promise<PrivateStore> {
  const env = { PATH: process.env.PATH, MONGOMS_SYSTEM_BINARY: process.env.MONGOMS_SYSTEM_BINARY };
  // A process of our own to freeze: a mongod if there is one, never a container or a URI.
  const backend: MongoBackend = await resolveMongoBackend({ ...env, MONGO_BACKEND: 'mongod' }).catch(() =>
    resolveMongoBackend({ ...env, MONGO_BACKEND: 'emulator' }),
  );
  const pid = backend.serverPid;
  if (!pid) throw new Error(`${backend.description} has no server process to freeze`);
  // A frozen server would outlive a crashed test file otherwise.
  const onExit = () => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  process.once('exit', onExit);
  return {
    uri: backend.uri,
    pid,
    description: backend.description,
    freeze: () => process.kill(pid, 'SIGSTOP'),
    thaw: () => process.kill(pid, 'SIGCONT'),
    stop: async () => {
      process.removeListener('exit', onExit);
      process.kill(pid, 'SIGCONT');
      await backend.stop();
    },
  };
}
