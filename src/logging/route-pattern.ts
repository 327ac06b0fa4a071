/** What app.setup.ts's onRequest hook leaves on the raw request for the request log: the matched route pattern, never the URL. */
export const ROUTE_PATTERN = Symbol('routePattern');

/** The caller's own X-Request-Id, when well-formed: logged beside ours (`clientRequestId`), never used as the request id. */
export const CLIENT_REQUEST_ID = Symbol('clientRequestId');

/** Set when the answer was a stored one sent again (Idempotent-Replayed): logged as `replayed: true`. */
export const REPLAYED = Symbol('replayed');
