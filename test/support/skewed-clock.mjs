// Preloaded into a service child process (`NODE_OPTIONS=--import=<this file>`)
// to play a host whose wall clock is off: Date.now() and `new Date()` move by
// TEST_CLOCK_SKEW_MS. The monotonic clock (performance.now) is untouched, as
// it is on such a host. Test-only; nothing in src/ knows about it.
// A Proxy rather than a subclass: libraries that recognise `Date` by identity
// or by name (mongoose schema types) still do.
const skewMs = Number(process.env.TEST_CLOCK_SKEW_MS ?? 0);
const HostDate = Date;
const skewedNow = () => HostDate.now() + skewMs;

globalThis.Date = new Proxy(HostDate, {
  construct(target, args, newTarget) {
    return Reflect.construct(target, args.length === 0 ? [skewedNow()] : args, newTarget);
  },
  apply() {
    return new HostDate(skewedNow()).toString();
  },
  get(target, property, receiver) {
    return property === 'now' ? skewedNow : Reflect.get(target, property, receiver);
  },
});
