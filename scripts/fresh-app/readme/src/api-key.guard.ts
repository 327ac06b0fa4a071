import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';

/** A stand-in for your authentication: `Authorization: Bearer <key>` -> a tenant, from API_KEYS=tenant:key,... */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  private readonly tenants = new Map(
    (process.env.API_KEYS ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => pair.split(':').reverse() as [string, string]),
  );

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; tenant?: string }>();
    const tenant = this.tenants.get(request.headers.authorization?.replace(/^Bearer /, '') ?? '');
    if (!tenant) throw new UnauthorizedException();
    request.tenant = tenant;
    return true;
  }
}
