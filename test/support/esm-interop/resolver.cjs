// Jest on Node 20 cannot require() an ES module (it can from Node 24.9), so a
// CommonJS package that does - @nestjs/throttler requires @nestjs/common and
// @nestjs/core, which are ESM-only since Nest 12 - fails to load in tests,
// while Node itself (require(esm), 20.19+) runs it fine. For such require()
// calls only, this resolver hands out a CommonJS module that re-exports the
// namespace setup.mjs imported: the very same module instances the test and
// the app use (one Reflector, one set of decorators). import statements are
// resolved as usual. Delete this folder once the tests run on Node >= 24.9.
const path = require('node:path');

const BRIDGED = {
  '@nestjs/common': path.join(__dirname, 'nestjs-common.cjs'),
  '@nestjs/core': path.join(__dirname, 'nestjs-core.cjs'),
};

module.exports = (request, options) => {
  if (BRIDGED[request] && options.conditions && options.conditions.includes('require')) return BRIDGED[request];
  return options.defaultResolver(request, options);
};
