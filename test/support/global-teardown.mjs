export default async function globalTeardown() {
  const backend = globalThis.__MONGO_BACKEND__;
  if (backend?.proxyStats) process.stdout.write(`\nSerializing proxy: ${JSON.stringify(backend.proxyStats)}\n`);
  await backend?.stop();
  await globalThis.__REDIS_SERVER__?.stop();
}
