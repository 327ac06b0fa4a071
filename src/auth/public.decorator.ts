import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'auth:public';

/** Routes that need no tenant: health, metrics, docs. */
export const Public = () => SetMetadata(IS_PUBLIC, true);
