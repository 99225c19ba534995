# install.consumer: installs the build into PREFIX, then builds install_consumer.c against
# that copy only, with pkg-config (pbd.pc) and with find_package(pbd) (pbdConfig.cmake), and
# runs both programs. Arguments (-D): BUILD_DIR, PREFIX, LIBDIR (CMAKE_INSTALL_LIBDIR),
# WORKDIR, SOURCE_DIR (tests/), CC (the build's C compiler), GENERATOR, PKG_CONFIG.
# Prints what it ran and its output on failure.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${cmd}\n${err}${out}")
  endif()
  message(STATUS "${what}: ok\n${out}")
endfunction()

file(REMOVE_RECURSE ${PREFIX} ${WORKDIR})
file(MAKE_DIRECTORY ${WORKDIR})
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})

# CMake: only the prefix is searched (no package registry), and the package found must be the
# installed one, not the build tree.
run("cmake configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/install_consumer -B ${WORKDIR}/cmake
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${CC} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
file(STRINGS ${WORKDIR}/cmake/CMakeCache.txt pbd_dir REGEX "^pbd_DIR:")
if(NOT pbd_dir STREQUAL "pbd_DIR:PATH=${PREFIX}/${LIBDIR}/cmake/pbd")
  message(FATAL_ERROR "found pbd's package at '${pbd_dir}', expected ${PREFIX}/${LIBDIR}/cmake/pbd")
endif()
run("cmake build" ${CMAKE_COMMAND} --build ${WORKDIR}/cmake)
run("cmake consumer" ${WORKDIR}/cmake/install_consumer)

# pkg-config: the same program from pbd.pc's flags alone, built as C11 with warnings as errors
# so that the installed headers must compile cleanly on their own.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found: pbd.pc is not tested (.ci/setup installs it)")
endif()
set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs --static pbd RESULT_VARIABLE rc
                OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs --static pbd failed (exit ${rc}):\n${err}")
endif()
message(STATUS "pkg-config: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run("pkg-config build" ${CC} -std=c11 -Wall -Wextra -Wpedantic -Werror
    ${SOURCE_DIR}/install_consumer.c ${flags} -o ${WORKDIR}/pkg_config_consumer)
run("pkg-config consumer" ${WORKDIR}/pkg_config_consumer)
