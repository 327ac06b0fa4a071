/** What app.setup.ts's onRequest hook leaves on the raw request for the request log: the matched route pattern, never the URL. */
export const ROUTE_PATTERN = Symbol('routePattern');
