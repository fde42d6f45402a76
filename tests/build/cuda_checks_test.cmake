# Unit test of cmake/SmoeCudaChecks.cmake with fake inputs (ctest
# cmake_cuda_checks, label unit): cmake -DSMOE_SOURCE_DIR=<repo> -P <this>.
# Exits non-zero with the failed expectation on the first mismatch.
cmake_minimum_required(VERSION 3.25)
include(${SMOE_SOURCE_DIR}/cmake/SmoeCudaChecks.cmake)

set(failures 0)
macro(expect_eq what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(SEND_ERROR "${what}: got '${got}', want '${want}'")
    math(EXPR failures "${failures} + 1")
  endif()
endmacro()
# A macro re-parses its arguments: keep backslashes out of the patterns.
macro(expect_match what got regex)
  if(NOT "${got}" MATCHES "${regex}")
    message(SEND_ERROR "${what}: '${got}' does not match '${regex}'")
    math(EXPR failures "${failures} + 1")
  endif()
endmacro()

# ---- torch/version.py (wheels) ------------------------------------------------
smoe_parse_torch_version_py(
  "from typing import Optional\n__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\nhip: Optional[str] = None\n" v)
expect_eq("version.py 2.11 cu130" "${v}" "13.0")
smoe_parse_torch_version_py("__version__ = '1.13.1+cu117'\ncuda = '11.7'\n" v)
expect_eq("version.py old style" "${v}" "11.7")
smoe_parse_torch_version_py("__version__ = '2.6.0+cpu'\ncuda: Optional[str] = None\nhip: Optional[str] = None\n" v)
expect_eq("version.py CPU wheel" "${v}" "none")
smoe_parse_torch_version_py("git_version = 'abc'\n" v)
expect_eq("version.py without cuda" "${v}" "")

# ---- libtorch build-version (zips) --------------------------------------------
foreach(case "2.6.0+cu126|12.6" "2.5.1+cu118\n|11.8" "2.9.0+cu130|13.0"
             "2.6.0+cpu|none" "2.6.0|")
  string(REPLACE "|" ";" case "${case}")
  list(GET case 0 text)
  list(LENGTH case n)
  set(want "")
  if(n GREATER 1)
    list(GET case 1 want)
  endif()
  string(REPLACE "\\n" "\n" text "${text}")
  smoe_parse_torch_build_version("${text}" v)
  expect_eq("build-version ${text}" "${v}" "${want}")
endforeach()

# ---- files found from Torch_DIR -----------------------------------------------
set(tmp "${CMAKE_CURRENT_BINARY_DIR}/smoe_cuda_checks_test_tmp")
file(REMOVE_RECURSE "${tmp}")
file(MAKE_DIRECTORY "${tmp}/site-packages/torch/share/cmake/Torch"
                    "${tmp}/libtorch/share/cmake/Torch" "${tmp}/debian/cmake/Torch")
file(WRITE "${tmp}/site-packages/torch/version.py"
     "__version__ = '2.8.0+cu128'\ncuda: Optional[str] = '12.8'\n")
file(WRITE "${tmp}/libtorch/build-version" "2.6.0+cu126\n")
smoe_torch_cuda_version_from_dir("${tmp}/site-packages/torch/share/cmake/Torch" v)
expect_eq("wheel Torch_DIR" "${v}" "12.8")
smoe_torch_cuda_version_from_dir("${tmp}/libtorch/share/cmake/Torch" v)
expect_eq("libtorch zip Torch_DIR" "${v}" "12.6")
smoe_torch_cuda_version_from_dir("${tmp}/debian/cmake/Torch" v)
expect_eq("Debian Torch_DIR (no files)" "${v}" "")
file(REMOVE_RECURSE "${tmp}")

# ---- toolkit major vs LibTorch's (A7) -----------------------------------------
smoe_cuda_torch_major_check("13.0.88" "12.8" ON OFF level msg)
expect_eq("13 vs 12 level" "${level}" "FATAL_ERROR")
expect_match("13 vs 12 message" "${msg}"
             "13.0.88 .major 13.*12.8 .major 12.*SMOE_ALLOW_CUDA_MISMATCH=ON")
smoe_cuda_torch_major_check("13.0.88" "12.8" ON ON level msg)
expect_eq("13 vs 12 allowed" "${level}" "WARNING")
expect_match("13 vs 12 allowed message" "${msg}" "building anyway")
smoe_cuda_torch_major_check("12.6.85" "12.8" ON OFF level msg)
expect_eq("12.6 vs 12.8 (same major)" "${level}" "STATUS")
smoe_cuda_torch_major_check("13.0.88" "13.0" TRUE OFF level msg)
expect_eq("13 vs 13" "${level}" "STATUS")
smoe_cuda_torch_major_check("13.0.88" "none" ON OFF level msg)
expect_eq("CPU wheel" "${level}" "")
smoe_cuda_torch_major_check("13.0.88" "" OFF OFF level msg)
expect_eq("CPU LibTorch (Debian), version unknown" "${level}" "")
smoe_cuda_torch_major_check("13.0.88" "" ON OFF level msg)
expect_eq("CUDA LibTorch, version unknown" "${level}" "WARNING")
expect_match("unknown message" "${msg}" "SMOE_TORCH_CUDA_VERSION")
smoe_cuda_torch_major_check("13.0.88" "cu128" ON OFF level msg)
expect_eq("malformed" "${level}" "FATAL_ERROR")

# ---- architectures (A12) ------------------------------------------------------
smoe_cuda_archs_below("80;90" 70 bad)
expect_eq("80;90" "${bad}" "")
smoe_cuda_archs_below("90a;80-real;90-virtual;native" 70 bad)
expect_eq("suffixes and native" "${bad}" "")
smoe_cuda_archs_below("70" 70 bad)
expect_eq("70 is enough" "${bad}" "")
smoe_cuda_archs_below("52;60;61;70;75;80;86;90" 70 bad)
expect_eq("Torch's common list" "${bad}" "52;60;61")
smoe_cuda_archs_below("all-major" 70 bad)
expect_eq("all-major" "${bad}" "all-major")
smoe_cuda_archs_below("OFF" 70 bad)
expect_eq("OFF" "${bad}" "OFF")
smoe_cuda_archs_below("" 70 bad)
expect_eq("empty" "${bad}" "<empty>")
smoe_cuda_archs_below("sm_90" 70 bad)
expect_eq("not CMake syntax" "${bad}" "sm_90")

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} expectation(s) failed")
endif()
message(STATUS "cuda_checks_test: all expectations hold")
