# cmake -DBIN=... -DPROG=agent|aggregator -DOUT=DIR -DHELP2MAN=... -P ManPages.cmake
# Writes OUT/PROG.1.gz from `BIN --help` and OUT/PROG-COMMAND.1.gz from each
# `BIN COMMAND --help` (the commands as `BIN --help` lists them), so the man
# pages say what --help says.
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${BIN} --help OUTPUT_VARIABLE _usage RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --help failed (${_rc})")
endif()
string(REGEX MATCH "\ncommands:\n.*" _list "${_usage}")
# A summary may hold ";", CMake's list separator: a comma in the man page.
string(REPLACE ";" "<semicolon>" _list "${_list}")
string(REGEX MATCHALL "\n  [a-z][a-z-]+ +[^\n]*" _lines "${_list}")

function(tc_page name help_option description)
  set(_out ${OUT}/${name}.1)
  execute_process(
    COMMAND ${HELP2MAN} --no-info --section=1 --name=${description}
            --help-option=${help_option} --version-option=--version --output=${_out} ${BIN}
    RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "help2man ${name}: ${_err}")
  endif()
  # A command's page is named after it, not after the binary.
  file(READ ${_out} _page)
  string(TOUPPER ${name} _title)
  string(TOUPPER ${PROG} _prog_title)
  string(REPLACE ".TH ${_prog_title} " ".TH ${_title} " _page "${_page}")
  string(REPLACE "\n${PROG} \\- " "\n${name} \\- " _page "${_page}")
  # Reproducible: no build date in the page.
  string(REGEX REPLACE "(\\.TH [^ ]+ \"1\") \"[^\"]*\"" "\\1 \"\"" _page "${_page}")
  file(WRITE ${_out} "${_page}")
  execute_process(COMMAND gzip -9nf ${_out} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "gzip ${_out} failed")
  endif()
endfunction()

if(PROG STREQUAL "agent")
  set(_what "traincast agent: conv benchmarks and training traces on this machine's devices")
else()
  set(_what "traincast aggregator: stores results, fits, predicts CNN training time")
endif()
tc_page(${PROG} --help "${_what}")
foreach(_line ${_lines})
  string(REGEX REPLACE "^\n  ([a-z][a-z-]+) +(.*)$" "\\1" _cmd "${_line}")
  string(REGEX REPLACE "^\n  ([a-z][a-z-]+) +(.*)$" "\\2" _summary "${_line}")
  string(REPLACE "<semicolon>" "," _summary "${_summary}")
  set(_opt "${_cmd} --help")
  if(_cmd STREQUAL "model")
    set(_opt "model describe --help")
  endif()
  tc_page(${PROG}-${_cmd} "${_opt}" "${_summary}")
endforeach()
