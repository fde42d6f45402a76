# Configure-time checks of a CUDA build against the LibTorch it links
# (review A7, A12). Pure functions of their arguments (no find_*, no cache),
# so tests/build/cuda_checks_test.cmake runs them under `cmake -P` with fake
# inputs; cmake/SmoeDeps.cmake calls them with the real ones.
#
#   smoe_parse_torch_version_py(TEXT OUT)       torch/version.py -> "12.8" |
#                                               "none" (CPU wheel) | ""
#   smoe_parse_torch_build_version(TEXT OUT)    libtorch's build-version
#                                               ("2.6.0+cu126") -> "12.6" |
#                                               "none" (+cpu) | ""
#   smoe_torch_cuda_version_from_dir(DIR OUT)   the two files above, found
#                                               from Torch_DIR
#   smoe_cuda_torch_major_check(TOOLKIT TORCH TORCH_HAS_CUDA ALLOW
#                               OUT_LEVEL OUT_MESSAGE)
#   smoe_cuda_archs_below(ARCHS MIN OUT)        entries of ARCHS older than MIN

# torch/version.py of a wheel has `cuda: Optional[str] = '12.8'` (older:
# `cuda = '11.8'`), or `= None` for a CPU build.
function(smoe_parse_torch_version_py text out)
  set(v "")
  if(text MATCHES "(^|\n)cuda(: *Optional\\[str\\])? *= *'([0-9]+\\.[0-9]+)")
    set(v "${CMAKE_MATCH_3}")
  elseif(text MATCHES "(^|\n)cuda(: *Optional\\[str\\])? *= *None")
    set(v "none")
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# libtorch zips have a `build-version` file: "2.6.0+cu126", "2.5.1+cu118",
# "2.9.0+cu130", "2.6.0+cpu". The last digit is the minor version.
function(smoe_parse_torch_build_version text out)
  set(v "")
  string(STRIP "${text}" text)
  if(text MATCHES "\\+cu([0-9]+)([0-9])$")
    set(v "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  elseif(text MATCHES "\\+cpu$")
    set(v "none")
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# The CUDA version LibTorch at Torch_DIR was built with, from the files
# beside it: <site-packages>/torch/version.py for a wheel
# (Torch_DIR = .../torch/share/cmake/Torch), <libtorch>/build-version for a
# libtorch zip (Torch_DIR = <libtorch>/share/cmake/Torch). "" when neither
# exists (Debian's libtorch-dev, a source install).
function(smoe_torch_cuda_version_from_dir torch_dir out)
  set(v "")
  get_filename_component(root "${torch_dir}/../../.." ABSOLUTE)
  if(EXISTS "${root}/version.py")
    file(READ "${root}/version.py" text)
    smoe_parse_torch_version_py("${text}" v)
  endif()
  if(v STREQUAL "" AND EXISTS "${root}/build-version")
    file(READ "${root}/build-version" text)
    smoe_parse_torch_build_version("${text}" v)
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# Decides what to say about the CUDA toolkit (CUDAToolkit_VERSION) that
# compiles kernels/ next to the CUDA LibTorch was built with. The kernels are
# handed LibTorch's cuBLAS handle (at::cuda::getCurrentCUDABlasHandle) but
# link the toolkit's libcublas: with different majors two libcublas
# (.so.12 and .so.13) load and the handle crosses between them (undefined
# behaviour, typically a crash). OUT_LEVEL is "" (nothing to say), STATUS,
# WARNING or FATAL_ERROR; OUT_MESSAGE the text.
#   TOOLKIT         e.g. "13.0.88"
#   TORCH           torch's CUDA version ("12.8"), "none" (CPU LibTorch) or
#                   "" (unknown)
#   TORCH_HAS_CUDA  whether LibTorch has CUDA libraries (c10_cuda)
#   ALLOW           SMOE_ALLOW_CUDA_MISMATCH: a mismatch only warns
function(smoe_cuda_torch_major_check toolkit torch torch_has_cuda allow
         out_level out_message)
  set(level "")
  set(msg "")
  string(REGEX MATCH "^[0-9]+" tk_major "${toolkit}")
  if(NOT torch_has_cuda OR torch STREQUAL "none")
    # CPU LibTorch: the CUDA ops path (SMOE_WITH_TORCH_CUDA) is not built.
  elseif(torch STREQUAL "")
    set(level WARNING)
    string(CONCAT msg
      "Could not tell which CUDA this CUDA LibTorch was built with (no "
      "torch/version.py or build-version beside Torch_DIR, no python3 with "
      "torch): the CUDA ${toolkit} toolkit / LibTorch major check did not "
      "run. Set -DSMOE_TORCH_CUDA_VERSION=<major.minor> (python3 -c 'import "
      "torch;print(torch.version.cuda)') to run it.")
  else()
    string(REGEX MATCH "^[0-9]+" torch_major "${torch}")
    if(tk_major STREQUAL "" OR torch_major STREQUAL "")
      set(level FATAL_ERROR)
      string(CONCAT msg
        "Malformed CUDA versions: toolkit '${toolkit}', LibTorch '${torch}' "
        "(want major.minor[.patch]).")
    elseif(tk_major EQUAL torch_major)
      set(level STATUS)
      string(CONCAT msg
        "CUDA toolkit ${toolkit} and LibTorch's CUDA ${torch} share major "
        "${tk_major}: one libcublas.so.${tk_major}")
    else()
      string(CONCAT msg
        "CUDA toolkit ${toolkit} (major ${tk_major}) differs from the CUDA "
        "LibTorch was built with, ${torch} (major ${torch_major}): kernels/ "
        "would link libcublas.so.${tk_major} while LibTorch loads "
        "libcublas.so.${torch_major}, and LibTorch's cuBLAS handle would be "
        "passed between the two (undefined behaviour).")
      if(allow)
        set(level WARNING)
        string(APPEND msg " SMOE_ALLOW_CUDA_MISMATCH=ON: building anyway.")
      else()
        set(level FATAL_ERROR)
        string(APPEND msg
          " Use a CUDA toolkit of LibTorch's major (CUDAToolkit_ROOT / "
          "CMAKE_CUDA_COMPILER) or a PyTorch/LibTorch built for CUDA "
          "${tk_major}; -DSMOE_ALLOW_CUDA_MISMATCH=ON builds anyway.")
      endif()
    endif()
  endif()
  set(${out_level} "${level}" PARENT_SCOPE)
  set(${out_message} "${msg}" PARENT_SCOPE)
endfunction()

# The entries of the CUDA_ARCHITECTURES list ARCHS (CMake syntax: 70, 90a,
# 80-real, 90-virtual, native, all, all-major, OFF) that are older than MIN
# (e.g. 70) or do not name a fixed architecture set at least MIN: "all" and
# "all-major" include old ones, OFF / empty leave the choice to nvcc (sm_52
# or sm_75 by version). "native" (the GPUs present at configure time) passes.
function(smoe_cuda_archs_below archs min out)
  set(bad "")
  if(archs STREQUAL "" OR archs STREQUAL "OFF" OR archs STREQUAL "FALSE")
    set(bad "${archs}")
    if(bad STREQUAL "")
      set(bad "<empty>")
    endif()
  else()
    foreach(a IN LISTS archs)
      if(a STREQUAL "native")
        continue()
      elseif(a MATCHES "^([0-9]+)[a-z]?(-real|-virtual)?$")
        if(CMAKE_MATCH_1 LESS min)
          list(APPEND bad "${a}")
        endif()
      else()
        list(APPEND bad "${a}")
      endif()
    endforeach()
  endif()
  set(${out} "${bad}" PARENT_SCOPE)
endfunction()
