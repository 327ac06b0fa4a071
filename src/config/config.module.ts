import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { allConfig } from './config.tokens.js';

@Module({
  imports: [ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: allConfig })],
})
export class AppConfigModule {}
