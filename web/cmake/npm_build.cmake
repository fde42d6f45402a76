# cmake -DSRC=web -DWORK=build/web/app -DDIST=build/web/dist -DOUT=x.cc
#       -DNPM=/usr/bin/npm -DREQUIRED=ON|OFF -P npm_build.cmake
#
# Copies the web sources to WORK (node_modules stay in the build dir, so build
# dirs never race on web/node_modules), runs `npm ci` when package-lock.json
# differs from the one last installed, builds with Vite into DIST and embeds
# DIST into OUT. A failing `npm ci` (no registry) falls back to the
# how-to-build page unless REQUIRED; a failing `vite build` always fails.
file(MAKE_DIRECTORY ${WORK})
foreach(f index.html vite.config.js package.json package-lock.json)
  file(COPY_FILE ${SRC}/${f} ${WORK}/${f} ONLY_IF_DIFFERENT)
endforeach()
file(REMOVE_RECURSE ${WORK}/src ${WORK}/public)
file(COPY ${SRC}/src DESTINATION ${WORK})
if(EXISTS ${SRC}/public)
  file(COPY ${SRC}/public DESTINATION ${WORK})
endif()

set(ENV{npm_config_update_notifier} false)
set(ENV{npm_config_fund} false)
set(ENV{npm_config_audit} false)
set(_ok ON)
set(_stamp ${WORK}/node_modules/.smoe-lock)
set(_need_ci ON)
if(EXISTS ${_stamp})
  file(READ ${_stamp} _old)
  file(READ ${WORK}/package-lock.json _new)
  if(_old STREQUAL _new)
    set(_need_ci OFF)
  endif()
endif()
if(_need_ci)
  message(STATUS "web: npm ci")
  execute_process(COMMAND ${NPM} ci --no-audit --no-fund --loglevel=error
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    # Some npm 11 releases write lock files without other platforms' optional
    # packages (rollup's, esbuild's) and then refuse them in `npm ci`.
    # `npm install` with the lock present installs the same pinned versions
    # (integrity-checked) and --no-save leaves the lock alone.
    message(STATUS "web: npm ci refused the lock file; npm install --no-save")
    execute_process(COMMAND ${NPM} install --no-save --no-audit --no-fund
                            --loglevel=error
                    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE _rc)
  endif()
  if(_rc EQUAL 0)
    file(COPY_FILE ${WORK}/package-lock.json ${_stamp})
  else()
    set(_ok OFF)
    set(_why "npm ci failed (${_rc}): is the npm registry reachable?")
  endif()
endif()
if(_ok)
  execute_process(COMMAND ${NPM} run build -- --outDir ${DIST} --emptyOutDir
                  WORKING_DIRECTORY ${WORK} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    # The packages are there, so the app's own sources are broken: a bug, not
    # a missing registry. Fail the build (a fallback page here once hid a
    # broken dashboard behind a skipped browser test).
    message(FATAL_ERROR "web: vite build failed (${_rc}); see the error above")
  endif()
endif()
if(NOT _ok)
  if(REQUIRED)
    message(FATAL_ERROR "web: ${_why}")
  endif()
  message(WARNING "web: ${_why}; embedding the how-to-build page instead")
  set(DIST "")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake)
