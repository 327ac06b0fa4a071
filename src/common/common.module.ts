import { Global, Module } from '@nestjs/common';
import { Clock, SystemClock } from './clock.js';
import { FaultInjector } from './fault-injector.js';

@Global()
@Module({
  providers: [{ provide: Clock, useClass: SystemClock }, FaultInjector],
  exports: [Clock, FaultInjector],
})
export class CommonModule {}
