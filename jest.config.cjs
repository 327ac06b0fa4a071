// ESM all the way: @nestjs/* 12 is ESM-only, so ts-jest emits ESM and Jest
// runs with --experimental-vm-modules (see package.json "test").
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  // The workspace packages are tested from their sources (never a stale dist/), and everything
  // under Jest shares one copy of each: one DI token per class, `instanceof` holds across them.
  moduleNameMapper: {
    '^@idempotent-orders/([a-z-]+)$': '<rootDir>/packages/$1/src/index.ts',
    '^@idempotent-orders/([a-z-]+)/([a-z-]+)$': '<rootDir>/packages/$1/src/$2/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json', diagnostics: { warnOnly: false } }],
  },
  testEnvironment: 'node',
  // bench/peers/*: the benchmark's peer apps, each a project of its own (own package.json, own node_modules
  // with Nest 10): nothing there is a test or a module of ours, and the haste map should not see its packages.
  modulePathIgnorePatterns: ['<rootDir>/bench/peers/'],
  // CommonJS dependencies that require() the ESM-only @nestjs packages
  // (@nestjs/throttler): Node runs them, Jest on Node < 24.9 cannot. See
  // test/support/esm-interop/resolver.cjs.
  resolver: '<rootDir>/test/support/esm-interop/resolver.cjs',
  setupFilesAfterEnv: [
    '<rootDir>/test/support/esm-interop/setup.mjs',
    '<rootDir>/test/support/status-with-body.mjs',
    '<rootDir>/test/support/process-health.mjs',
  ],
};

// Two tiers (issue 33): the folders below belong to the soak tier (npm run test:soak). `npm test` sets
// TEST_TIER=gate, which leaves their project out; without it (a file run by path) every project is there.
const SOAK_FOLDERS = ['<rootDir>/test/process/', '<rootDir>/test/packaging/'];
const GATE_ONLY = process.env.TEST_TIER === 'gate';

module.exports = {
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.cjs'],
  globalSetup: '<rootDir>/test/support/global-setup.mjs',
  globalTeardown: '<rootDir>/test/support/global-teardown.mjs',
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/bench/**/*.spec.ts', '<rootDir>/packages/*/src/**/*.spec.ts'],
    },
    {
      ...common,
      // The gate (npm test): in-process e2e, the model at a small pinned budget (package.json "test").
      displayName: 'e2e',
      testMatch: [
        '<rootDir>/test/**/*.e2e-spec.ts',
        '<rootDir>/src/**/*.int-spec.ts',
        '<rootDir>/packages/*/src/**/*.int-spec.ts',
        '<rootDir>/packages/*/test/**/*.e2e-spec.ts',
      ],
      testPathIgnorePatterns: SOAK_FOLDERS,
    },
    ...(GATE_ONLY
      ? []
      : [
          {
            ...common,
            // The soak (npm run test:soak, scripts/test-soak.mjs): the service as real processes - killed, frozen,
            // skewed, flooded - and the packages installed from their tarballs. Chosen by folder.
            displayName: 'soak',
            testMatch: SOAK_FOLDERS.map((folder) => `${folder}**/*.e2e-spec.ts`),
          },
        ]),
  ],
};
