# Finds SMoE Lab's dependencies. Every dependency is a system package (Debian 12)
# except LibTorch on GPU machines, which comes from PyTorch's wheel
# (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).
find_package(Threads REQUIRED)
find_package(PkgConfig)
find_package(absl REQUIRED)

# ---- CUDA ---------------------------------------------------------------------
set(SMOE_CUDA_ENABLED OFF)
if(NOT SMOE_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(SMOE_CUDA_ENABLED ON)
    find_path(SMOE_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(SMOE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  elseif(SMOE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SMOE_WITH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

# ---- LibTorch (model + trainer only) ------------------------------------------
# Debian's libtorch-dev (1.13, CPU) or PyTorch's LibTorch (CUDA) on GPU machines.
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(WARNING "LibTorch not found: worker/model and smoe-trainer are skipped")
endif()

# ---- Tests / benchmarks --------------------------------------------------------
if(SMOE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(SMOE_BUILD_BENCHMARKS)
  find_package(benchmark QUIET)
endif()

# ---- Services (coordinator, store, daemon, CLI) --------------------------------
if(SMOE_BUILD_SERVICES)
  find_package(Protobuf REQUIRED)
  # Debian's gRPC ships no usable CMake config: use pkg-config.
  pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET grpc++)
  find_program(SMOE_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  find_package(SQLite3 REQUIRED)
  find_package(yaml-cpp REQUIRED)
  find_package(nlohmann_json REQUIRED)
  find_package(httplib QUIET)
  find_package(OpenSSL REQUIRED)
  find_package(CURL REQUIRED)
endif()
