export default async function globalTeardown() {
  await globalThis.__MONGO_BACKEND__?.stop();
}
