# cJSON as the imported target pbd::cjson, for this build and for an installed
# pbdConfig.cmake alike, so that the exported pbd::pbd can name it. Debian's cJSON ships a
# CMake config whose target is a plain `cjson`, and installs built without CMake ship none, so
# the header and the library are looked for directly. Leaves pbd::cjson undefined when either
# is missing; the caller reports it.
if(NOT TARGET pbd::cjson)
  find_path(CJSON_INCLUDE_DIR cjson/cJSON.h)
  find_library(CJSON_LIBRARY NAMES cjson)
  mark_as_advanced(CJSON_INCLUDE_DIR CJSON_LIBRARY)
  if(CJSON_INCLUDE_DIR AND CJSON_LIBRARY)
    add_library(pbd::cjson UNKNOWN IMPORTED)
    set_target_properties(pbd::cjson PROPERTIES
      IMPORTED_LOCATION "${CJSON_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CJSON_INCLUDE_DIR}")
  endif()
endif()
