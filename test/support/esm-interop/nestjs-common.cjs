// See resolver.cjs: the ESM namespace imported by setup.mjs, for require('@nestjs/common').
module.exports = globalThis.__esmForRequire['@nestjs/common'];
