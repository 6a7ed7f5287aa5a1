# syntax=docker/dockerfile:1
# One image for every role: `serve --roles api|realtime|smtp|worker`, `migrate`, `operator`.
# Built unchanged by `docker build` and by buildah (`make e2e` on the k8s-node); see README, Kubernetes.
# At run time the root filesystem may be read-only: only /tmp and $MAILBOX_DATA_DIR are written.
ARG NODE_IMAGE=node:24-slim

# 1. Compile TypeScript; dev dependencies (tsc and the rest) exist only in this stage.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY operator ./operator
COPY bench ./bench
RUN ./node_modules/.bin/tsc -p tsconfig.json
# The web console and the API reference page (static files, served by the api role at / and /api/docs).
COPY web ./web
RUN ./node_modules/.bin/vite build --config web/vite.config.ts --logLevel warn

# 2. Production dependencies only (no native modules: nothing is compiled here).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# 3. The runtime: Node 24 slim, the compiled code and production modules, owned by root and
#    run as the unprivileged `node` user (uid 1000); npm, npx, corepack and yarn removed.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    MAILBOX_DATA_DIR=/var/lib/mailbox
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-* \
 && mkdir -p /var/lib/mailbox && chown node:node /var/lib/mailbox
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/operator ./dist/operator
COPY --from=build /app/dist/web ./dist/web
COPY crds ./crds
USER 1000:1000
# 8080 HTTP API, MCP, Socket.IO, health and metrics; 8081 operator health and metrics;
# 2587 and 2525 SMTP submission and MX (the chart's Service publishes them as 587 and 25).
EXPOSE 8080 8081 2587 2525
VOLUME ["/var/lib/mailbox"]
# --max-semi-space-size=16 caps V8's young generation at 16 MB a semi-space: by default it grows to 64 MB
# each while ~2 000 modules load and is never given back, ~50 MB of every role's idle RSS (README,
# "Memory per role"); package.json's start script passes the same flag (test/unit/node-flags.test.ts).
# The preload starts OpenTelemetry before pg, koa and ioredis load (src/telemetry/preload.ts).
ENTRYPOINT ["node", "--max-semi-space-size=16", "--import", "/app/dist/src/telemetry/preload.js", "/app/dist/src/cli.js"]
CMD ["serve"]
