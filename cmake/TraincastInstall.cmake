# `cmake --install build [--prefix /usr/local]`, and the Debian packages of
# cmake/TraincastPackage.cmake (install components):
#   common      the PyTorch harness (trace runner, ONNX export) and the
#               weight-free ONNX exports of the CNN set with its conv list,
#               in share/traincast: what both programs need to name and load
#               the torchvision CNNs
#   agent       the agent of this build (with the CUDA backend where the
#               toolkit was found), its systemd unit and example config, man
#               pages, bash completion, docs
#   agent_cpu   the same for the CPU-only agent (agent/cpu/agent, nothing
#               of CUDA in it); in a build without CUDA it is the agent
#               itself and there is no agent component
#   aggregator  the aggregator, its unit and example config, man pages, bash
#               completion, docs
# A plain `cmake --install` installs common, aggregator and the build's
# agent; where both agents exist, agent_cpu is installed by name only
# (--component common, then --component agent_cpu). The binaries look for the harness and the exports
# in PREFIX/share/traincast next to them, else in the source tree they were
# built from while it exists; TRAINCAST_HARNESS_DIR and TRAINCAST_DATA_DIR
# override both (common/util/tc_paths.h). The units run the binaries of
# this prefix and go to PREFIX/lib/systemd/system, where systemd looks for
# them.
include(GNUInstallDirs)
set(TC_UNIT_DIR lib/systemd/system)
set(TC_DOC_SHARED ${CMAKE_SOURCE_DIR}/docs/operator-guide.md ${CMAKE_SOURCE_DIR}/docs/transport.md
                  ${CMAKE_SOURCE_DIR}/docs/user-guide.md)

# The units and example configs of deploy/ with /usr/local/ replaced by this
# prefix.
function(tc_install_deploy_file src component destination)
  get_filename_component(_name ${src} NAME)
  file(READ ${CMAKE_SOURCE_DIR}/${src} _text)
  string(REPLACE "/usr/local/" "${CMAKE_INSTALL_PREFIX}/" _text "${_text}")
  file(WRITE ${CMAKE_BINARY_DIR}/deploy/${_name}.tmp "${_text}")
  file(COPY_FILE ${CMAKE_BINARY_DIR}/deploy/${_name}.tmp ${CMAKE_BINARY_DIR}/deploy/${_name}
       ONLY_IF_DIFFERENT)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${src})
  install(FILES ${CMAKE_BINARY_DIR}/deploy/${_name} DESTINATION ${destination}
          COMPONENT ${component} ${ARGN})
endfunction()

# Man pages from each binary's --help and every command's (help2man), when
# help2man is there; without it the build says so and installs none. PROG
# is the program's name (agent_cpu's is agent).
find_program(TC_HELP2MAN help2man)
function(tc_man_pages target prog component)
  if(NOT TC_HELP2MAN)
    return()
  endif()
  set(_dir ${CMAKE_BINARY_DIR}/man/${target})
  set(_stamp ${_dir}/stamp)
  add_custom_command(
    OUTPUT ${_stamp}
    COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:${target}> -DPROG=${prog}
            -DOUT=${_dir} -DHELP2MAN=${TC_HELP2MAN} -P ${CMAKE_SOURCE_DIR}/cmake/ManPages.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
    DEPENDS ${target} ${CMAKE_SOURCE_DIR}/cmake/ManPages.cmake
    COMMENT "man pages of ${target} (help2man)")
  add_custom_target(${target}_man ALL DEPENDS ${_stamp})
  install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component}
          ${ARGN} FILES_MATCHING PATTERN "*.1.gz")
endfunction()

file(GLOB TC_INSTALL_HARNESS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/agent/harness/*.py)
install(FILES ${TC_INSTALL_HARNESS} DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/harness
        COMPONENT common)
file(GLOB TC_INSTALL_MODELS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/data/*.onnx)
install(FILES ${TC_INSTALL_MODELS} ${CMAKE_SOURCE_DIR}/tests/data/cnn_set.convs
        DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/models COMPONENT common)

# One agent program (TARGET) as COMPONENT of the Debian package PACKAGE: the
# binary, its unit, example config, completion, docs and man pages; the rest
# of ARGN goes to each install() (EXCLUDE_FROM_ALL).
function(tc_install_agent target component package)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${component}
          ${ARGN})
  tc_install_deploy_file(deploy/systemd/traincast-agent@.service ${component} ${TC_UNIT_DIR}
                         ${ARGN})
  tc_install_deploy_file(deploy/config/agent.conf ${component}
                         ${CMAKE_INSTALL_DATADIR}/traincast/deploy ${ARGN})
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/bash-completion/traincast
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME agent
          COMPONENT ${component} ${ARGN})
  install(FILES ${TC_DOC_SHARED} ${CMAKE_SOURCE_DIR}/docs/trace-protocol.md
                ${CMAKE_SOURCE_DIR}/docs/model-graphs.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package} COMPONENT ${component} ${ARGN})
  tc_man_pages(${target} agent ${component} ${ARGN})
endfunction()

if(TRAINCAST_AGENT AND TC_HAVE_CUDA)
  tc_install_agent(agent agent traincast-agent)
  tc_install_agent(agent_cpu agent_cpu traincast-agent-cpu EXCLUDE_FROM_ALL)
elseif(TRAINCAST_AGENT)
  tc_install_agent(agent agent_cpu traincast-agent-cpu)
endif()

if(TRAINCAST_AGGREGATOR)
  install(TARGETS aggregator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT aggregator)
  tc_install_deploy_file(deploy/systemd/traincast-aggregator.service aggregator ${TC_UNIT_DIR})
  tc_install_deploy_file(deploy/config/aggregator.conf aggregator
                         ${CMAKE_INSTALL_DATADIR}/traincast/deploy)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/bash-completion/traincast
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME aggregator
          COMPONENT aggregator)
  install(FILES ${TC_DOC_SHARED} ${CMAKE_SOURCE_DIR}/docs/fitting.md
                ${CMAKE_SOURCE_DIR}/docs/benchmark-sets.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/traincast-aggregator COMPONENT aggregator)
  tc_man_pages(aggregator aggregator aggregator)
endif()
