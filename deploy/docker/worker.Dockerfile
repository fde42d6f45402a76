# syntax=docker/dockerfile:1
# SMoE Lab worker images: `smoe worker` (the daemon) + `smoe-trainer`, as uid
# 10001. Two targets share everything but the CUDA parts:
#   worker-cuda (the default, last stage): built with SMOE_WITH_CUDA against
#     PyTorch's CUDA LibTorch; NCCL and the CUDA runtime come from the
#     nvidia/cuda base (libnccl-dev: /usr/include), whose CUDA major must
#     match LibTorch's (cu126 here; CMake checks, review A7). Also has
#     smoe-trainer-full (kind skillmix and `smoe doctor`).
#   worker-cpu: Debian 12 and Debian's LibTorch (libtorch-dev, CPU only):
#     kinds sraven (device: cpu) and command, for CPU pools and CI.
# Shared: the runtime layer (runtime-setup.sh: the binaries' packages, tini,
# the smoe user and /var/lib/smoe-worker), the entrypoint, HOME=/tmp and the
# BINARIES=prebuilt route. Build from the repository root (deploy/README.md):
#   docker build -f deploy/docker/worker.Dockerfile -t smoe-worker:0.1.0 .
#   docker build -f deploy/docker/worker.Dockerfile --target worker-cpu -t smoe-worker-cpu:0.1.0 .
# Without a registry (podman, a local Debian base; CI): deploy/images/build.sh.
# Ubuntu 24.04 ships the same gRPC (1.51), protobuf (3.21) and Abseil
# (20220623) as Debian 12, so the -dev packages match scripts/install-deps.
#
# Build arguments: BASE_IMAGE (Debian 12, worker-cpu), CUDA_BUILD_IMAGE and
# CUDA_RUNTIME_IMAGE (worker-cuda), BINARIES (source: compile here, the
# default; prebuilt: worker-cpu takes smoe, smoe-trainer, runtime-packages and
# cuda-lib/ from the build context `prebuilt`, which CI has just built on
# Debian 12 -- with the CUDA toolkit there, a CUDA build whose CUDA runtime
# libraries deploy/images/build.sh puts in cuda-lib/).
ARG BASE_IMAGE=debian:12.11-slim
ARG CUDA_BUILD_IMAGE=nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04
ARG BINARIES=source

# ---- worker-cpu ------------------------------------------------------------
FROM ${BASE_IMAGE} AS cpu-binaries-source
# The trainer's part of scripts/install-deps (Debian's CPU LibTorch) plus the
# services' packages (the daemon is part of this image); no test packages.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libtorch-dev libgloo-dev libopenblas0-pthread \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libsqlite3-dev nlohmann-json3-dev libyaml-cpp-dev \
      libcpp-httplib-dev libcli11-dev libcurl4-openssl-dev libssl-dev \
      libsentencepiece-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSMOE_WITH_CUDA=OFF -DSMOE_WEB=OFF \
      -DSMOE_BUILD_TESTS=OFF -DSMOE_BUILD_BENCHMARKS=OFF \
 && cmake --build build --target smoe smoe-trainer \
 && install -d /out /out/cuda-lib \
 && install -m 0755 -s build/bin/smoe build/bin/smoe-trainer /out/ \
 && deploy/docker/runtime-packages.sh /out/smoe /out/smoe-trainer > /out/runtime-packages

# cuda-lib: empty, or, for a CUDA build's binaries (CI's build: the toolkit is
# installed there), the CUDA runtime libraries they load (build.sh copies
# them from the toolkit: libcudart, libnccl, ...; no GPU needed to load them).
FROM ${BASE_IMAGE} AS cpu-binaries-prebuilt
COPY --from=prebuilt smoe smoe-trainer runtime-packages /out/
COPY --from=prebuilt cuda-lib/ /out/cuda-lib/

FROM cpu-binaries-${BINARIES} AS cpu-binaries

FROM ${BASE_IMAGE} AS worker-cpu
COPY --from=cpu-binaries /out/runtime-packages /tmp/runtime-packages
COPY deploy/docker/runtime-setup.sh /usr/local/lib/smoe/runtime-setup.sh
RUN /usr/local/lib/smoe/runtime-setup.sh /tmp/runtime-packages /var/lib/smoe-worker \
      -- ca-certificates libopenblas0-pthread
COPY --from=cpu-binaries /out/cuda-lib/ /usr/local/lib/smoe-cuda/
RUN echo /usr/local/lib/smoe-cuda > /etc/ld.so.conf.d/smoe-cuda.conf && ldconfig
COPY --from=cpu-binaries /out/smoe /out/smoe-trainer /usr/local/bin/
ENV HOME=/tmp OMP_NUM_THREADS=1
USER 10001:10001
WORKDIR /var/lib/smoe-worker
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/smoe", "worker"]
CMD ["--work-dir=/var/lib/smoe-worker", "--gpus=0"]

# ---- worker-cuda (default target) ------------------------------------------
FROM ${CUDA_BUILD_IMAGE} AS cuda-binaries
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
 && install -d /out \
 && install -m 0755 -s build/bin/smoe /out/smoe \
 && install -m 0755 build/bin/smoe-trainer build/bin/smoe-trainer-full /out/ \
 && deploy/docker/runtime-packages.sh /out/smoe /out/smoe-trainer \
      /out/smoe-trainer-full > /out/runtime-packages

FROM ${CUDA_RUNTIME_IMAGE} AS worker-cuda
COPY --from=cuda-binaries /out/runtime-packages /tmp/runtime-packages
COPY deploy/docker/runtime-setup.sh /usr/local/lib/smoe/runtime-setup.sh
RUN /usr/local/lib/smoe/runtime-setup.sh /tmp/runtime-packages /var/lib/smoe-worker
COPY --from=cuda-binaries /opt/libtorch/lib /opt/libtorch/lib
COPY --from=cuda-binaries /out/smoe /out/smoe-trainer /out/smoe-trainer-full /usr/local/bin/
ENV LD_LIBRARY_PATH=/opt/libtorch/lib:/usr/local/nvidia/lib64 \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    HOME=/tmp
USER 10001:10001
WORKDIR /var/lib/smoe-worker
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/smoe", "worker"]
CMD ["--work-dir=/var/lib/smoe-worker"]
