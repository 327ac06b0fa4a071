import { AsyncLocalStorage } from 'node:async_hooks';

/** Whether the handler of the simple-mode attempt running in this async context has been entered. */
interface HandlerEntry {
  entered: boolean;
}

const entries = new AsyncLocalStorage<HandlerEntry>();

/**
 * Runs `run` (Nest's `next.handle()`: the pipes, then the handler) and says
 * whether the handler itself was entered. Nest runs interceptors before
 * pipes, so in simple mode the key is claimed before validation; a request
 * a pipe refuses never reached the handler and must not keep the claim
 * (issue 48). Nothing in Nest tells an interceptor where the pipes end and
 * the handler begins: `@Idempotent()` wraps the handler (`markEntry`), and
 * the wrapper flags the entry found in its async context.
 */
export async function runTracingEntry<T>(run: () => Promise<T>): Promise<{ value: T } | { error: unknown; entered: boolean }> {
  const entry: HandlerEntry = { entered: false };
  try {
    return { value: await entries.run(entry, run) };
  } catch (error) {
    return { error, entered: entry.entered };
  }
}

/**
 * A method decorator: the handler, wrapped so that entering it flags the
 * entry of the attempt running it (outside simple mode there is none, and
 * the wrapper only calls through). Nest reads a route's metadata from the
 * function (`descriptor.value`): what decorators applied before this one
 * wrote on the original is copied onto the wrapper, and the name is kept
 * (Nest looks up a route's parameters by the method's name).
 */
export function markEntry(): MethodDecorator {
  return (_target, _property, descriptor) => {
    const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
    if (typeof original !== 'function') return;
    const wrapper = function (this: unknown, ...args: unknown[]): unknown {
      const entry = entries.getStore();
      if (entry) entry.entered = true;
      return original.apply(this, args);
    };
    for (const key of Reflect.getOwnMetadataKeys(original) as unknown[])
      Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original) as unknown, wrapper);
    Object.defineProperty(wrapper, 'name', { value: original.name });
    (descriptor as { value: unknown }).value = wrapper;
  };
}
