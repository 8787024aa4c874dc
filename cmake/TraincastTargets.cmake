# One static library per folder of the source tree (docs/architecture.md):
# tc_add_folder_library(NAME [EXTRA_SOURCES...]) builds the folder's .c
# files (main.c excepted) into NAME, its headers public to the targets that
# link it. Each folder then names what it links: PUBLIC what its headers
# include, PRIVATE what only its .c files use.
function(tc_add_folder_library name)
  file(GLOB _src CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
  list(FILTER _src EXCLUDE REGEX "/main\\.c$")
  add_library(${name} STATIC ${_src} ${ARGN})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${TC_WARNINGS})
endfunction()
