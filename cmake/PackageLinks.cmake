# CPack's pre-build script (CPACK_PRE_BUILD_SCRIPTS): every program about to
# be packaged links only libraries that some installed Debian package owns.
# CPack runs dpkg-shlibdeps with --ignore-missing-info, which leaves a
# library of no package (a CUDA toolkit unpacked into /usr/local, a library
# built by hand) out of Depends without a word, and apt then installs a
# package that cannot start. Here dpkg-shlibdeps runs without it, on each
# program of the staging directory, and any library it cannot place stops
# the packaging with its name.
find_program(_tc_shlibdeps dpkg-shlibdeps)
if(NOT _tc_shlibdeps)
  message(FATAL_ERROR "dpkg-shlibdeps is missing (Debian package dpkg-dev): the packages' "
                      "library dependencies cannot be computed")
endif()
file(GLOB_RECURSE _tc_files LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
set(_tc_work "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/../package-links")
file(REMOVE_RECURSE "${_tc_work}")
file(MAKE_DIRECTORY "${_tc_work}/debian")
# dpkg-shlibdeps reads the source package's name from debian/control.
file(WRITE "${_tc_work}/debian/control"
     "Source: traincast\n\nPackage: traincast\nArchitecture: any\nDescription: -\n")
set(_tc_checked 0)
foreach(_f IN LISTS _tc_files)
  if(IS_SYMLINK "${_f}")
    continue()
  endif()
  file(READ "${_f}" _magic LIMIT 4 HEX)
  if(NOT _magic STREQUAL "7f454c46")
    continue()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C ${_tc_shlibdeps} -O "-e${_f}"
                  WORKING_DIRECTORY "${_tc_work}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    string(REGEX MATCHALL "no dependency information found for [^\n]*|[^\n]*not found[^\n]*"
           _why "${_err}")
    if(NOT _why)
      set(_why "${_err}")
    endif()
    string(REPLACE ";" "\n  " _why "${_why}")
    file(RELATIVE_PATH _rel "${CPACK_TEMPORARY_INSTALL_DIRECTORY}" "${_f}")
    message(FATAL_ERROR "${_rel} links a library that no installed Debian package owns, so no "
                        "package can depend on it:\n  ${_why}\nBuild against packaged "
                        "libraries (a CUDA build links only its static runtime: "
                        "cmake/TraincastCUDA.cmake), or use deploy/package.sh --bundle, which "
                        "carries its libraries.")
  endif()
  math(EXPR _tc_checked "${_tc_checked} + 1")
endforeach()
file(REMOVE_RECURSE "${_tc_work}")
message(STATUS "traincast: ${_tc_checked} program(s) link only packaged libraries")
