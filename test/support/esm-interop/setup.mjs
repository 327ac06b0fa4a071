// See resolver.cjs: imported before each test file, in its module registry.
import * as common from '@nestjs/common';
import * as core from '@nestjs/core';

globalThis.__esmForRequire = { '@nestjs/common': common, '@nestjs/core': core };
