# Helper functions shared by every folder's CMakeLists.txt.
#
#   smoe_library(NAME SRCS ... DEPS ... [PRIVATE_DEPS ...])
#   smoe_cc_test(NAME SRCS ... DEPS ... [LABELS ...])   gtest binary, tests discovered
#   smoe_cuda_test(NAME SRCS ... DEPS ...)               label `gpu`; skips without a device
#   smoe_bench(NAME SRCS ... DEPS ...)                   binary under bench/
#   smoe_bench_smoke(TARGET|NAME [COMMAND ...] [ARGS ...] [LABELS ...])
#                                                        a tiny run in ctest

set(SMOE_WARNING_FLAGS -Wall -Wextra)
if(SMOE_WERROR)
  list(APPEND SMOE_WARNING_FLAGS -Werror)
endif()

function(smoe_set_warnings target)
  target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:${SMOE_WARNING_FLAGS}>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
endfunction()

function(smoe_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  smoe_set_warnings(${name})
endfunction()

function(smoe_cc_test name)
  if(NOT SMOE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  smoe_set_warnings(${name})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  # Discovery runs the binary with --gtest_list_tests when ctest starts; on a
  # loaded 2-core machine a LibTorch test binary (an -O0 coverage build
  # above all) takes longer than CMake's default 5 s to load, and a
  # discovery timeout aborts the whole ctest run.
  gtest_discover_tests(${name}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      DISCOVERY_MODE PRE_TEST
      DISCOVERY_TIMEOUT 120
      PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                 ENVIRONMENT "SMOE_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()

# GPU tests: compiled when CUDA is enabled, labelled `gpu`; each test calls
# GTEST_SKIP() when no device is present, so GPU-less CI stays green honestly.
function(smoe_cuda_test name)
  if(NOT SMOE_CUDA_ENABLED)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  smoe_cc_test(${name} SRCS ${ARG_SRCS} DEPS ${ARG_DEPS} LABELS gpu)
endfunction()

function(smoe_bench name)
  if(NOT SMOE_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
  smoe_set_warnings(${name})
endfunction()

# Every bench program also runs at a tiny size in ctest (label bench-smoke),
# so that none rots between the sessions that measure with it: the run must
# exit 0 (or 77 = skipped: no device / no PyTorch for a Python peer); its
# figures are not measurements. TARGET: a smoe_bench target, run with ARGS.
# COMMAND: any other command line (Python peers), test named NAME_smoke.
# Outputs that say the machine has no CUDA device count as skipped (the
# kernel benches on CPU-only machines).
function(smoe_bench_smoke name)
  if(NOT SMOE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "COMMAND;ARGS;LABELS" ${ARGN})
  if(ARG_COMMAND)
    set(cmd ${ARG_COMMAND})
  elseif(TARGET ${name})
    set(cmd $<TARGET_FILE:${name}> ${ARG_ARGS})
  else()
    return()
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  add_test(NAME ${name}_smoke COMMAND ${cmd}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name}_smoke PROPERTIES
      LABELS "bench-smoke;${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
      SKIP_RETURN_CODE 77
      SKIP_REGULAR_EXPRESSION "no CUDA-capable device|CUDA driver version is insufficient|cudaErrorNoDevice|cudaErrorInsufficientDriver"
      ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1;SMOE_LOG_LEVEL=ERROR")
endfunction()
