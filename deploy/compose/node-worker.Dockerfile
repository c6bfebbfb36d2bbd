# The Node worker of examples/node-worker, with the TypeScript SDK of clients/typescript built
# from this repository. Built by compose.yaml, from the repository's root.
FROM docker.io/library/node:20-bookworm-slim
WORKDIR /src/clients/typescript
COPY clients/typescript/package.json clients/typescript/package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY clients/typescript/ ./
RUN npm run build
WORKDIR /src/examples/node-worker
COPY examples/node-worker/package.json examples/node-worker/package-lock.json ./
RUN npm ci --no-audit --no-fund --omit=dev
COPY examples/node-worker/*.mjs ./
USER node
ENTRYPOINT ["node"]
CMD ["worker.mjs"]
