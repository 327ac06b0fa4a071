import { SetMetadata } from '@nestjs/common';
import type { ApiKeyScope } from '../config/configuration.js';

export const REQUIRED_SCOPE = 'auth:scope';

/**
 * The scope an API key needs for a controller or route (API_KEYS
 * `tenant:secret:scope+scope`). Without it a route needs `orders`: a key
 * that creates orders cannot erase customers or release keys.
 */
export const RequireScope = (scope: ApiKeyScope) => SetMetadata(REQUIRED_SCOPE, scope);
