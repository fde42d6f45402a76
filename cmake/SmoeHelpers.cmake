# Helper functions shared by every folder's CMakeLists.txt.
#
#   smoe_library(NAME SRCS ... DEPS ... [PRIVATE_DEPS ...])
#   smoe_cc_test(NAME SRCS ... DEPS ... [LABELS ...])   gtest binary, tests discovered
#   smoe_cuda_test(NAME SRCS ... DEPS ...)               label `gpu`; skips without a device
#   smoe_bench(NAME SRCS ... DEPS ...)                   binary under bench/

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
  gtest_discover_tests(${name}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      DISCOVERY_MODE PRE_TEST
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
