# syntax=docker/dockerfile:1
# SMoE Lab coordinator image: `smoe coordinator` (gRPC API, grpc.health.v1 and
# the embedded dashboard), Debian 12, CPU only, runs as uid 10001.
# Build from the repository root (see deploy/README.md):
#   docker build -f deploy/docker/coordinator.Dockerfile -t smoe-coordinator:0.1.0 .

# Node.js for the dashboard build (Vite 7 needs Node >= 20.19; Debian 12 has 18).
FROM node:22.12.0-bookworm-slim AS node

FROM debian:12.11-slim AS build
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
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSMOE_WITH_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON \
      -DSMOE_WEB=ON -DSMOE_BUILD_TESTS=OFF -DSMOE_BUILD_BENCHMARKS=OFF \
 && cmake --build build --target smoe \
 && strip build/bin/smoe \
 && deploy/docker/runtime-packages.sh build/bin/smoe > build/runtime-packages

FROM debian:12.11-slim
COPY --from=build /src/build/runtime-packages /tmp/runtime-packages
# Shared libraries of `smoe` (from ldd), tini as PID 1, sqlite3 for online
# backups (docs/deploy.md).
RUN apt-get update \
 && xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends \
      tini sqlite3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && groupadd --system --gid 10001 smoe \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/smoe \
      --no-create-home --shell /usr/sbin/nologin smoe \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/smoe /run/smoe
COPY --from=build /src/build/bin/smoe /usr/local/bin/smoe
USER 10001:10001
WORKDIR /var/lib/smoe
EXPOSE 50051 8080
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/smoe", "coordinator"]
CMD ["--listen=0.0.0.0:50051", "--data-dir=/var/lib/smoe"]
