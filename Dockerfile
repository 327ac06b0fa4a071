# syntax=docker/dockerfile:1
# Production image of the orders service.
#   docker build -t idempotent-orders .
# Needs MONGODB_URI (a replica set), API_KEYS and IDEMPOTENCY_ENCRYPTION_KEY at
# run time: NODE_ENV=production refuses to start without them (see
# .env.example). docker-compose.yml runs it next to a 3-member replica set.

# ---- Stage 1: compile TypeScript --------------------------------------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
# The workspace install needs every workspace's package.json (packages/*: the
# idempotency package the app runs on, the conformance kit, the reference client).
COPY package.json package-lock.json ./
COPY packages/nest-idempotency/package.json packages/nest-idempotency/
COPY packages/idempotency-conformance/package.json packages/idempotency-conformance/
COPY packages/idempotent-client/package.json packages/idempotent-client/
# Nothing needs an install script to compile (the only runtime one is
# @scarf/scarf's telemetry ping), so none run.
RUN npm ci --no-audit --no-fund --ignore-scripts
# .dockerignore keeps node_modules, dist, .git, .env etc. out of the context.
COPY . .
RUN npm run build

# ---- Stage 2: runtime ---------------------------------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# The one workspace the service runs on: npm ci links node_modules/@idempotent-orders/nest-idempotency to it.
COPY packages/nest-idempotency/package.json packages/nest-idempotency/
# --omit=optional drops the embedded MongoDB emulator (development only;
# production always connects to MONGODB_URI).
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts \
  && npm cache clean --force
# Files stay owned by root: the service user can read them but not change them.
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/nest-idempotency/dist packages/nest-idempotency/dist
USER node
# 3000: the API; 9464: /metrics (METRICS_PORT), for the scraper's network only, never published with the API.
EXPOSE 3000 9464
# Liveness only (is the process serving?); readiness (/health/ready) belongs to
# the orchestrator, see docker-compose.yml.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node as PID 1 directly (no npm wrapper), so SIGTERM reaches the app's
# graceful shutdown.
CMD ["node", "dist/src/main.js"]
