# syntax=docker/dockerfile:1
# The auth server as one binary (deno compile) on a slim base, run as a
# non-root user. The image is built by CI (the development machines cannot run
# Docker); by hand: docker build -t authsvc .   Run: the README's docker run
# line, compose.yaml, docs/operations.md.

ARG DENO_VERSION=2.9.6

# --- build: compile server/main.ts with the "server" permission set ---------
FROM denoland/deno:${DENO_VERSION} AS build
WORKDIR /src
COPY deno.json deno.lock deps.ts mod.ts oidc.ts ./
COPY client ./client
COPY server ./server
COPY migrations ./migrations
COPY scripts/compile.ts ./scripts/compile.ts
RUN deno install --frozen --entrypoint server/main.ts
RUN deno run -A scripts/compile.ts --output /out/authsvc \
 && /out/authsvc version \
 && mkdir -p /out/data

# --- run: glibc and libgcc only (what a deno compile binary needs) ----------
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/authsvc /usr/local/bin/authsvc
# PGlite's data (when DATABASE_URL is unset) and the generated JWT secret.
COPY --from=build --chown=65532:65532 /out/data /data
# Declared after the COPY, so a new volume starts as that directory (owned by the
# server's user): docker run -v authsvc-data:/data ... keeps the data across containers.
VOLUME /data
ENV AUTHSVC_API_HOST=0.0.0.0 \
    PORT=8081 \
    AUTHSVC_DB_DATA_DIR=/data
WORKDIR /data
USER 65532:65532
EXPOSE 8081
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/authsvc", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/authsvc"]
CMD ["serve"]
