import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * On close, every connection that is not running a handler is cut at once:
 * idle keep-alive sockets, and sockets still sending headers or a body (a
 * request that never reached a handler has done nothing, and the client can
 * retry it). Otherwise one stalled upload would hold `server.close()` - and so
 * the pool-closing shutdown hooks - until its request timeout, or past the
 * shutdown grace. Requests whose handler runs are left to finish (drain).
 */
export function closeIdleConnectionsOnClose(fastify: FastifyInstance): void {
  const open = new Set<Socket>();
  const handling = new Set<Socket>();
  fastify.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      handling.delete(socket);
    });
  });
  fastify
    .addHook('preHandler', (request, _reply, done) => {
      handling.add(request.raw.socket);
      done();
    })
    .addHook('onResponse', (request, _reply, done) => {
      handling.delete(request.raw.socket);
      done();
    })
    .addHook('preClose', (done) => {
      for (const socket of open) if (!handling.has(socket)) socket.destroy();
      done();
    });
}
