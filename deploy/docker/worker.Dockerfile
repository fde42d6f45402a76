# syntax=docker/dockerfile:1
# SMoE Lab GPU worker image: `smoe worker` (the daemon) + `smoe-trainer`
# (and smoe-trainer-full, which it runs for kind skillmix and doctor)
# built with SMOE_WITH_CUDA against PyTorch's CUDA LibTorch; NCCL and the
# CUDA runtime come from the nvidia/cuda base (libnccl-dev: /usr/include),
# whose CUDA major must match LibTorch's (cu126 here; CMake checks, review
# A7). Runs as uid 10001.
# Build from the repository root (see deploy/README.md):
#   docker build -f deploy/docker/worker.Dockerfile -t smoe-worker:0.1.0 .
# Ubuntu 24.04 ships the same gRPC (1.51), protobuf (3.21) and Abseil
# (20220623) as Debian 12, so the -dev packages match scripts/install-deps.

FROM nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04 AS build
# PyTorch's LibTorch for CUDA 12.6 (C++11 ABI). Pin the checksum for
# reproducible builds: --build-arg LIBTORCH_SHA256=<sha256 of the zip>.
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu126/libtorch-cxx11-abi-shared-with-deps-2.6.0%2Bcu126.zip
ARG LIBTORCH_SHA256=""
# Device code architectures: kernels/ (CMAKE_CUDA_ARCHITECTURES, sm_70 or
# newer) and LibTorch's CMake config (TORCH_CUDA_ARCH_LIST, same GPUs); see
# docs/gpu-build.md.
ARG CUDA_ARCHITECTURES="80;90"
ARG TORCH_CUDA_ARCH_LIST="8.0;9.0"
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The -dev packages of the GPU part (Abseil, nlohmann-json, CLI11) are
# scripts/gpu-prefix's CORE list (tests/build/check-gpu-recipe.sh checks);
# the rest are the services' (the daemon is part of this image).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates curl unzip \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libsqlite3-dev nlohmann-json3-dev libyaml-cpp-dev \
      libcpp-httplib-dev libcli11-dev libcurl4-openssl-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL -o /tmp/libtorch.zip "${LIBTORCH_URL}" \
 && if [ -n "${LIBTORCH_SHA256}" ]; then echo "${LIBTORCH_SHA256}  /tmp/libtorch.zip" | sha256sum -c -; fi \
 && unzip -q /tmp/libtorch.zip -d /opt \
 && rm /tmp/libtorch.zip
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSMOE_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
      -DTORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST}" \
      -DCMAKE_PREFIX_PATH=/opt/libtorch \
      -DSMOE_WEB=OFF -DSMOE_BUILD_TESTS=OFF -DSMOE_BUILD_BENCHMARKS=OFF \
 && cmake --build build --target smoe smoe-trainer smoe-trainer-full \
 && strip build/bin/smoe \
 && deploy/docker/runtime-packages.sh build/bin/smoe build/bin/smoe-trainer \
      build/bin/smoe-trainer-full > build/runtime-packages

FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04
COPY --from=build /src/build/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && groupadd --system --gid 10001 smoe \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/smoe-worker \
      --no-create-home --shell /usr/sbin/nologin smoe \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/smoe-worker
COPY --from=build /opt/libtorch/lib /opt/libtorch/lib
COPY --from=build /src/build/bin/smoe /src/build/bin/smoe-trainer \
     /src/build/bin/smoe-trainer-full /usr/local/bin/
ENV LD_LIBRARY_PATH=/opt/libtorch/lib:/usr/local/nvidia/lib64 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    HOME=/tmp
USER 10001:10001
WORKDIR /var/lib/smoe-worker
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/smoe", "worker"]
CMD ["--work-dir=/var/lib/smoe-worker"]
