# Runs PBD with ARGS (a ;-list) under the environment ENV (a ;-list of VAR=VALUE) and checks:
#   EXIT    the exit code: a number, or "nonzero";
#   MATCH   a regular expression the output (stderr, then stdout) must match;
#   CREATES a file that must exist afterwards, with LINES lines when LINES is given;
#   ABSENT  a file that must not exist afterwards (nor any temporary beside it).
# Prints what it found on failure.
if(CREATES)
  file(REMOVE ${CREATES})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ENV} ${PBD} ${ARGS}
                WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE errtext)
set(all "${errtext}${out}")
if(EXIT STREQUAL "nonzero")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected a non-zero exit, got 0\n${all}")
  endif()
elseif(NOT rc EQUAL EXIT)
  message(FATAL_ERROR "expected exit ${EXIT}, got ${rc}\n${all}")
endif()
if(MATCH AND NOT all MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}':\n${all}")
endif()
if(CREATES)
  if(NOT EXISTS ${CREATES})
    message(FATAL_ERROR "${CREATES} was not written\n${all}")
  endif()
  if(LINES)
    file(STRINGS ${CREATES} lines)
    list(LENGTH lines n)
    if(NOT n EQUAL LINES)
      message(FATAL_ERROR "${CREATES}: ${n} lines, expected ${LINES}")
    endif()
  endif()
endif()
if(ABSENT)
  file(GLOB left "${ABSENT}*")
  if(left)
    message(FATAL_ERROR "files left behind: ${left}\n${all}")
  endif()
endif()
message(STATUS "exit ${rc}; output: ${all}")
