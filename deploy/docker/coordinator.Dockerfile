# syntax=docker/dockerfile:1
# SMoE Lab coordinator image: `smoe coordinator` (gRPC API, grpc.health.v1 and
# the embedded dashboard), Debian 12, CPU only, runs as uid 10001.
# Build from the repository root (see deploy/README.md):
#   docker build -f deploy/docker/coordinator.Dockerfile -t smoe-coordinator:0.1.0 .
# Without a registry (podman, a local Debian base and Node.js image; what CI
# does): deploy/images/build.sh.
#
# Build arguments:
#   BASE_IMAGE  Debian 12 base of every stage (deploy/images/make-base.sh
#               makes one with debootstrap)
#   NODE_IMAGE  an image with Node.js and npm in /usr/local (the official
#               node image; deploy/images/make-node.sh makes one from npm)
#   BINARIES    source: compile `smoe` here (the default);
#               prebuilt: take `smoe` and its runtime-packages list from the
#               build context `prebuilt` (--build-context prebuilt=DIR), for
#               CI, which has just built them on the same Debian 12
ARG BASE_IMAGE=debian:12.11-slim
ARG NODE_IMAGE=node:22.12.0-bookworm-slim
ARG BINARIES=source

# Node.js for the dashboard build (Vite 6; Debian 12's Node 18 also works).
FROM ${NODE_IMAGE} AS node

FROM ${BASE_IMAGE} AS binaries-source
# The service subset of scripts/install-deps: no LibTorch, CUDA or test
# packages (tests/deploy checks every -dev package here is in install-deps).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libsqlite3-dev nlohmann-json3-dev libyaml-cpp-dev \
      libcpp-httplib-dev libcli11-dev libcurl4-openssl-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
# node and npm (npm lives in /usr/local/lib/node_modules, linked from bin).
COPY --from=node /usr/local/ /usr/local/
# Where egress to the npm registry passes a TLS-inspecting proxy: the CA
# bundle npm should trust, mounted into the build (deploy/images/build.sh
# passes the host's npm cafile). Unset: npm's own CAs.
ARG NPM_CONFIG_CAFILE
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSMOE_WITH_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON \
      -DSMOE_WEB=ON -DSMOE_BUILD_TESTS=OFF -DSMOE_BUILD_BENCHMARKS=OFF \
 && cmake --build build --target smoe \
 && install -d /out \
 && install -m 0755 -s build/bin/smoe /out/smoe \
 && deploy/docker/runtime-packages.sh /out/smoe > /out/runtime-packages

FROM ${BASE_IMAGE} AS binaries-prebuilt
COPY --from=prebuilt smoe runtime-packages /out/

FROM binaries-${BINARIES} AS binaries

FROM ${BASE_IMAGE} AS coordinator
COPY --from=binaries /out/runtime-packages /tmp/runtime-packages
COPY deploy/docker/runtime-setup.sh /usr/local/lib/smoe/runtime-setup.sh
# Shared libraries of `smoe` (from ldd), tini as PID 1, sqlite3 for online
# backups (docs/deploy.md); the smoe user and its directories.
RUN /usr/local/lib/smoe/runtime-setup.sh /tmp/runtime-packages /var/lib/smoe /run/smoe \
      -- sqlite3 ca-certificates
COPY --from=binaries /out/smoe /usr/local/bin/smoe
USER 10001:10001
WORKDIR /var/lib/smoe
EXPOSE 50051 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/smoe", "coordinator"]
CMD ["--listen=0.0.0.0:50051", "--data-dir=/var/lib/smoe"]
