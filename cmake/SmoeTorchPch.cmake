# One precompiled <torch/torch.h> for every LibTorch translation unit.
#
#   smoe_apply_torch_pch()   call once, at the end of the top-level CMakeLists
#
# Parsing LibTorch's headers is most of the cost of a translation unit that
# includes them (bench/results/first-result-2026-11-24.md: attention.cc 19.8
# CPU-s at -O2, 9.6 with the header precompiled). The header is compiled once,
# by the object library smoe_torch_pch, and every target with a source that
# includes LibTorch (directly or through one of our headers) reuses it
# (target_precompile_headers REUSE_FROM). Sources that do not include
# LibTorch are marked SKIP_PRECOMPILE_HEADERS, so they neither pay for
# loading the PCH nor see LibTorch's macros.
#
# GCC uses a PCH only when the options that matter match (it warns through
# -Winvalid-pch otherwise and falls back to the text header: slower, same
# result). Our targets share one set of flags; per-target -D macros such as
# SMOE_WITH_CUDA are not used by LibTorch's headers. SMOE_TORCH_PCH=OFF turns
# it off. ccache caches these compiles with sloppiness pch_defines,time_macros
# (scripts/build and .ci/run set CCACHE_SLOPPINESS).

option(SMOE_TORCH_PCH "Precompile <torch/torch.h> once for all LibTorch sources" ON)

# Our headers that include LibTorch, directly or through another of ours.
function(_smoe_torchy_headers out)
  file(GLOB_RECURSE _headers RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/worker/*.h ${PROJECT_SOURCE_DIR}/tests/*.h
       ${PROJECT_SOURCE_DIR}/bench/*.h)
  set(_torchy "")
  set(_changed TRUE)
  while(_changed)
    set(_changed FALSE)
    foreach(_h IN LISTS _headers)
      if(_h IN_LIST _torchy)
        continue()
      endif()
      _smoe_includes_torch(${PROJECT_SOURCE_DIR}/${_h} "${_torchy}" _yes)
      if(_yes)
        list(APPEND _torchy ${_h})
        set(_changed TRUE)
      endif()
    endforeach()
  endwhile()
  set(${out} "${_torchy}" PARENT_SCOPE)
endfunction()

# Whether FILE includes LibTorch or one of the headers in TORCHY.
function(_smoe_includes_torch file torchy out)
  set(${out} FALSE PARENT_SCOPE)
  if(NOT EXISTS ${file})
    return()
  endif()
  file(STRINGS ${file} _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  foreach(_line IN LISTS _includes)
    if(_line MATCHES "[<\"](torch|ATen|c10)/")
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    if(_line MATCHES "\"([^\"]+)\"" AND CMAKE_MATCH_1 IN_LIST torchy)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

function(_smoe_targets_under dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _smoe_targets_under(${_sub} _more)
    list(APPEND _targets ${_more})
  endforeach()
  set(${out} "${_targets}" PARENT_SCOPE)
endfunction()

function(smoe_apply_torch_pch)
  if(NOT SMOE_TORCH_PCH OR NOT Torch_FOUND)
    return()
  endif()
  set(_src ${PROJECT_BINARY_DIR}/smoe_torch_pch.cc)
  file(WRITE ${_src}.in "// The object that builds the shared <torch/torch.h> PCH.\n")
  configure_file(${_src}.in ${_src} COPYONLY)
  add_library(smoe_torch_pch OBJECT ${_src})
  target_link_libraries(smoe_torch_pch PRIVATE ${TORCH_LIBRARIES})
  target_precompile_headers(smoe_torch_pch PRIVATE <torch/torch.h>)
  smoe_set_warnings(smoe_torch_pch)

  _smoe_torchy_headers(_torchy)
  _smoe_targets_under(${PROJECT_SOURCE_DIR} _targets)
  set(_count 0)
  foreach(_t IN LISTS _targets)
    if(_t STREQUAL "smoe_torch_pch")
      continue()
    endif()
    get_target_property(_type ${_t} TYPE)
    if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      continue()  # shared/module libraries are -fPIC: a different PCH
    endif()
    get_target_property(_dir ${_t} SOURCE_DIR)
    get_target_property(_sources ${_t} SOURCES)
    set(_uses FALSE)
    set(_skip "")
    foreach(_s IN LISTS _sources)
      if(NOT _s MATCHES "\\.(cc|cpp)$")
        continue()
      endif()
      if(IS_ABSOLUTE ${_s})
        set(_path ${_s})
      else()
        set(_path ${_dir}/${_s})
      endif()
      _smoe_includes_torch(${_path} "${_torchy}" _yes)
      if(_yes)
        set(_uses TRUE)
      else()
        list(APPEND _skip ${_path})
      endif()
    endforeach()
    if(_uses)
      target_precompile_headers(${_t} REUSE_FROM smoe_torch_pch)
      if(_skip)
        set_source_files_properties(${_skip} TARGET_DIRECTORY ${_t}
            PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
      math(EXPR _count "${_count} + 1")
    endif()
  endforeach()
  message(STATUS "SMoE Lab: <torch/torch.h> precompiled once, reused by ${_count} targets")
endfunction()
