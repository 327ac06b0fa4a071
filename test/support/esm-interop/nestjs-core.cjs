// See resolver.cjs: the ESM namespace imported by setup.mjs, for require('@nestjs/core').
module.exports = globalThis.__esmForRequire['@nestjs/core'];
