import { describe, expect, it } from '@jest/globals';
import { chooseBackend } from './embedded-mongo.js';

describe('chooseBackend', () => {
  it('prefers MONGODB_URI, then a real mongod, then a Docker engine (Testcontainers), then the emulator', () => {
    expect(chooseBackend({ uri: 'mongodb://db', mongodBinary: '/bin/mongod', dockerEngine: true })).toBe('uri');
    expect(chooseBackend({ mongodBinary: '/bin/mongod', dockerEngine: true })).toBe('mongod');
    expect(chooseBackend({ dockerEngine: true })).toBe('container');
    expect(chooseBackend({ dockerEngine: false })).toBe('emulator');
  });

  it('lets MONGO_BACKEND force a choice, but never over an explicit MONGODB_URI', () => {
    expect(chooseBackend({ forced: 'emulator', mongodBinary: '/bin/mongod', dockerEngine: true })).toBe('emulator');
    expect(chooseBackend({ forced: 'container', dockerEngine: false })).toBe('container');
    expect(chooseBackend({ uri: 'mongodb://db', forced: 'emulator', dockerEngine: false })).toBe('uri');
  });

  it('refuses an unknown MONGO_BACKEND by name', () => {
    expect(() => chooseBackend({ forced: 'sqlite', dockerEngine: false })).toThrow(
      /MONGO_BACKEND must be one of mongod, container, emulator/,
    );
  });
});
