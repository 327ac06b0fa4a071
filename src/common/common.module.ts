import { Global, Module } from '@nestjs/common';
import { FaultInjector } from './fault-injector.js';

/** The Clock is provided by DatabaseModule (ServerClock): times come from the MongoDB primary. */
@Global()
@Module({
  providers: [FaultInjector],
  exports: [FaultInjector],
})
export class CommonModule {}
