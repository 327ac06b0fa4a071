/** Everything this app reads from its environment: the package itself reads none of it. */
export interface AppConfig {
  port: number;
  host: string;
  mongoUri: string;
  dbName: string;
  encryptionKey: Buffer;
  digestKey: Buffer;
}

export function loadConfig(env: NodeJS.ProcessEnv): AppConfig {
  const required = (name: string): string => {
    const value = env[name];
    if (!value) throw new Error(`${name} is required`);
    return value;
  };
  const key = (name: string, bytes: number): Buffer => {
    const value = Buffer.from(required(name), 'base64');
    if (value.length !== bytes) throw new Error(`${name}: ${bytes} bytes, base64`);
    return value;
  };
  return {
    port: Number(env.PORT ?? 3000),
    host: env.HOST ?? '127.0.0.1',
    mongoUri: required('MONGODB_URI'),
    dbName: required('MONGODB_DB_NAME'),
    encryptionKey: key('NOTES_ENCRYPTION_KEY', 32),
    digestKey: key('NOTES_DIGEST_KEY', 32),
  };
}
