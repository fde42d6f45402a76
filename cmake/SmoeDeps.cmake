# Finds SMoE Lab's dependencies. Every dependency is a system package (Debian 12)
# except LibTorch on GPU machines, which comes from PyTorch's wheel
# (-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).
#
# What each configuration needs (docs/gpu-build.md has the GPU recipe):
#   always                 CMake >= 3.25, a C++17 compiler, Abseil (absl),
#                          CLI11 (header-only; common/flags.h: smoe, smoe-trainer)
#   SMOE_BUILD_SERVICES=OFF  + nlohmann-json (worker/trainer, skillmix, mixtral),
#                          LibTorch for worker/model and smoe-trainer; optional:
#                          libcurl (Skill-Mix grader), libsentencepiece,
#                          google-benchmark, cpp-httplib (tests), libgloo-dev
#                          (Gloo CPU expert parallelism; not with pip PyTorch)
#   SMOE_BUILD_TESTS=ON    + GoogleTest and GoogleMock
#   CUDA                   nvcc + cuBLAS (the toolkit; same major as LibTorch's
#                          CUDA, checked below), NCCL for multi-GPU (optional)
#   SMOE_BUILD_SERVICES=ON + gRPC, protobuf, SQLite, yaml-cpp, OpenSSL, libcurl,
#                          cpp-httplib, Node.js for web/
# There are no FetchContent fallbacks: GPU machines usually have no network.
# scripts/gpu-prefix packs the Debian packages of the SMOE_BUILD_SERVICES=OFF
# set into a relocatable prefix for them instead.
find_package(Threads REQUIRED)
find_package(PkgConfig)
find_package(absl REQUIRED)
# Found here, not in the folders that use it: imported targets are visible
# only below the directory that found them, and tests/ep links it too.
find_package(nlohmann_json REQUIRED)
# Command lines of smoe and smoe-trainer (common/flags.h, smoe_flags).
find_package(CLI11 REQUIRED)
include(SmoeCudaChecks)

set(SMOE_NCCL_ROOT "" CACHE PATH
    "NCCL install to use (has include/nccl.h and lib/libnccl.so*); empty: search")
set(SMOE_TORCH_CUDA_VERSION "" CACHE STRING
    "CUDA version LibTorch was built with (major.minor); empty: detect")
option(SMOE_ALLOW_CUDA_MISMATCH
       "Only warn when the CUDA toolkit's major differs from LibTorch's" OFF)

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
    # kernels/permute/permute.cu uses __match_any_sync (sm_70+). Checked
    # before enable_language, whose test compile would fail first on archs
    # the toolkit dropped.
    smoe_cuda_archs_below("${CMAKE_CUDA_ARCHITECTURES}" 70 _smoe_old_archs)
    if(_smoe_old_archs)
      message(FATAL_ERROR
        "CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES}: smoe_kernels "
        "needs sm_70 or newer (__match_any_sync in kernels/permute/permute.cu); "
        "refused: ${_smoe_old_archs}. Name the GPUs' architectures, e.g. "
        "-DCMAKE_CUDA_ARCHITECTURES=90 for H100/H200, \"80;90\" for A100 too.")
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(SMOE_CUDA_ENABLED ON)
    # The architectures kernels/ is built for, whatever LibTorch's CMake
    # config does to CMAKE_CUDA_ARCHITECTURES / CMAKE_CUDA_FLAGS below.
    set(SMOE_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  elseif(SMOE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SMOE_WITH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

# ---- LibTorch (model + trainer only) ------------------------------------------
# Debian's libtorch-dev (1.13, CPU) or PyTorch's LibTorch (CUDA) on GPU machines.
# PyTorch 2.x's CMake config (cmake/public/cuda.cmake) sets
# CMAKE_CUDA_ARCHITECTURES to OFF and appends -gencode flags from
# TORCH_CUDA_ARCH_LIST (or, with no GPU visible at configure time, a "common"
# list starting at sm_50) to CMAKE_CUDA_FLAGS. None of our .cu files include
# LibTorch headers, so both are restored afterwards: kernels/ is built for
# SMOE_CUDA_ARCHITECTURES only. Set TORCH_CUDA_ARCH_LIST too (the gpu preset
# does) so LibTorch's config neither auto-detects nor warns.
set(_smoe_cuda_flags_before "${CMAKE_CUDA_FLAGS}")
find_package(Torch QUIET)
if(SMOE_CUDA_ENABLED)
  set(CMAKE_CUDA_FLAGS "${_smoe_cuda_flags_before}")
  set(CMAKE_CUDA_ARCHITECTURES "${SMOE_CUDA_ARCHITECTURES}")
endif()
if(NOT Torch_FOUND)
  message(WARNING "LibTorch not found: worker/model and smoe-trainer are skipped")
endif()

# LibTorch with CUDA libraries: the ops path (SMOE_WITH_TORCH_CUDA) hands
# LibTorch's cuBLAS handle to kernels/, so the toolkit's major must match the
# CUDA LibTorch was built with (review A7; cmake/SmoeCudaChecks.cmake).
set(SMOE_TORCH_HAS_CUDA OFF)
if(Torch_FOUND AND (TARGET c10_cuda OR C10_CUDA_LIBRARY))
  set(SMOE_TORCH_HAS_CUDA ON)
endif()
if(SMOE_CUDA_ENABLED AND Torch_FOUND)
  set(_smoe_torch_cuda "${SMOE_TORCH_CUDA_VERSION}")
  if(_smoe_torch_cuda STREQUAL "")
    smoe_torch_cuda_version_from_dir("${Torch_DIR}" _smoe_torch_cuda)
  endif()
  if(_smoe_torch_cuda STREQUAL "" AND SMOE_TORCH_HAS_CUDA)
    # Last resort: a python3 whose torch is the LibTorch found here.
    find_program(SMOE_PYTHON3 python3)
    if(SMOE_PYTHON3)
      execute_process(
        COMMAND ${SMOE_PYTHON3} -c
          "import torch,sys;sys.stdout.write((torch.version.cuda or 'none')+'|'+torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _smoe_py RESULT_VARIABLE _smoe_py_rc ERROR_QUIET
        TIMEOUT 120)
      if(_smoe_py_rc EQUAL 0 AND _smoe_py MATCHES "^([^|]+)\\|(.+)$")
        set(_smoe_py_cuda "${CMAKE_MATCH_1}")
        get_filename_component(_smoe_py_prefix "${CMAKE_MATCH_2}" REALPATH)
        get_filename_component(_smoe_torch_dir "${Torch_DIR}" REALPATH)
        string(FIND "${_smoe_torch_dir}" "${_smoe_py_prefix}" _smoe_at)
        if(_smoe_at EQUAL 0)
          set(_smoe_torch_cuda "${_smoe_py_cuda}")
        endif()
      endif()
    endif()
  endif()
  smoe_cuda_torch_major_check("${CUDAToolkit_VERSION}" "${_smoe_torch_cuda}"
      ${SMOE_TORCH_HAS_CUDA} ${SMOE_ALLOW_CUDA_MISMATCH}
      _smoe_level _smoe_msg)
  if(_smoe_level)
    message(${_smoe_level} "${_smoe_msg}")
  endif()
endif()

# ---- NCCL (kernels/all_to_all NcclCommunicator) --------------------------------
# nccl.h is not in a stock CUDA toolkit: libnccl-dev puts it in /usr/include
# (and the CUDA devel images), pip's nvidia-nccl-cu12/-cu13 in
# site-packages/nvidia/nccl (libnccl.so.2 only, no unversioned .so). Searched:
# SMOE_NCCL_ROOT alone when set; else the pip location next to LibTorch's
# site-packages (or python3's) first, then the CUDA toolkit and the system
# paths. Pip's comes first because a wheel's libtorch_cuda loads it: one
# libnccl.so.2 is loaded per process (the first found by soname), so linking
# another one would hand LibTorch an NCCL it was not built with.
if(SMOE_CUDA_ENABLED)
  if(SMOE_NCCL_ROOT)
    set(_smoe_nccl_hints "${SMOE_NCCL_ROOT}")
    set(_smoe_nccl_opts NO_DEFAULT_PATH)
  else()
    set(_smoe_nccl_opts "")
    set(_smoe_nccl_hints "")
    set(_smoe_sites "")
    if(Torch_DIR MATCHES "^(.*)/torch/share/cmake/Torch/?$")
      list(APPEND _smoe_sites "${CMAKE_MATCH_1}")  # site-packages
    else()
      find_program(SMOE_PYTHON3 python3)
      if(SMOE_PYTHON3)
        execute_process(
          COMMAND ${SMOE_PYTHON3} -c
            "import os,sys,torch;sys.stdout.write(os.path.dirname(os.path.dirname(torch.__file__)))"
          OUTPUT_VARIABLE _smoe_site RESULT_VARIABLE _smoe_site_rc ERROR_QUIET
          TIMEOUT 120)
        if(_smoe_site_rc EQUAL 0 AND IS_DIRECTORY "${_smoe_site}")
          list(APPEND _smoe_sites "${_smoe_site}")
        endif()
      endif()
    endif()
    foreach(_site IN LISTS _smoe_sites)
      file(GLOB _smoe_pip_nccl LIST_DIRECTORIES true
           "${_site}/nvidia/nccl" "${_site}/nvidia/cu[0-9]*")
      list(APPEND _smoe_nccl_hints ${_smoe_pip_nccl})
    endforeach()
    list(APPEND _smoe_nccl_hints "${CUDAToolkit_LIBRARY_ROOT}"
         "${CUDAToolkit_TARGET_DIR}" /usr /usr/local)
  endif()
  find_path(SMOE_NCCL_INCLUDE_DIR nccl.h
    HINTS ${_smoe_nccl_hints} PATH_SUFFIXES include ${_smoe_nccl_opts})
  find_library(SMOE_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
    HINTS ${_smoe_nccl_hints} PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu
    ${_smoe_nccl_opts})
  if(SMOE_NCCL_INCLUDE_DIR AND SMOE_NCCL_LIBRARY)
    message(STATUS "NCCL: ${SMOE_NCCL_INCLUDE_DIR}/nccl.h, ${SMOE_NCCL_LIBRARY}")
  else()
    message(STATUS "NCCL not found (set SMOE_NCCL_ROOT): no NcclCommunicator, "
                   "multi-GPU expert parallelism is unavailable")
  endif()
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
  find_package(httplib QUIET)
  find_package(OpenSSL REQUIRED)
  find_package(CURL REQUIRED)
endif()
