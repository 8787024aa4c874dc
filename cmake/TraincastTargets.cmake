# One static library per folder of the source tree (docs/architecture.md):
#
#   tc_add_folder_library(NAME SOURCES a.c b.c ... [INCLUDE dir ...]
#                         [PRIVATE_INCLUDE dir ...])
#
# builds the listed sources (paths relative to the folder) into NAME. The
# folder's headers (or those of the INCLUDE folders) are public to the
# targets that link it; PRIVATE_INCLUDE folders (its internal/ headers) only
# to its own files. Each folder then names what it links: PUBLIC what its
# headers include, PRIVATE what only its .c files use.
function(tc_add_folder_library name)
  cmake_parse_arguments(A "" "" "SOURCES;INCLUDE;PRIVATE_INCLUDE" ${ARGN})
  if(NOT A_SOURCES)
    message(FATAL_ERROR "tc_add_folder_library(${name}): no SOURCES")
  endif()
  if(NOT A_INCLUDE)
    set(A_INCLUDE .)
  endif()
  add_library(${name} STATIC ${A_SOURCES})
  foreach(dir ${A_INCLUDE})
    target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  endforeach()
  foreach(dir ${A_PRIVATE_INCLUDE})
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  endforeach()
  target_compile_options(${name} PRIVATE ${TC_WARNINGS})
  # Every .c file of the folder is listed (a file left out would not build).
  file(GLOB _all RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*.c
       ${CMAKE_CURRENT_SOURCE_DIR}/*/*.c)
  list(FILTER _all EXCLUDE REGEX "(^|/)main\\.c$")
  foreach(f ${_all})
    if(NOT f IN_LIST A_SOURCES AND NOT IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${f})
      get_filename_component(_sub ${f} DIRECTORY)
      if(_sub AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_sub}/CMakeLists.txt)
        continue() # a folder with a library of its own
      endif()
      message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}/${f} is in no library: list it in "
                          "the SOURCES of ${name} (${CMAKE_CURRENT_LIST_FILE})")
    endif()
  endforeach()
endfunction()
