# `cmake --install build [--prefix /usr/local]`, and the Debian packages of
# cmake/TraincastPackage.cmake, one per role (install component):
#   agent       the agent, its PyTorch harness (trace runner, ONNX export),
#               the weight-free ONNX exports of the CNN set, its systemd unit
#               and example config, man pages, bash completion, docs
#   aggregator  the aggregator, its unit and example config, man pages, bash
#               completion, docs
# The binaries look for the harness and the exports in the source tree they
# were built from while it exists, else in ../share/traincast next to them;
# TRAINCAST_HARNESS_DIR and TRAINCAST_DATA_DIR override both (the agent unit
# sets them). The units run the binaries of this prefix and go to
# PREFIX/lib/systemd/system, where systemd looks for them.
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
          COMPONENT ${component})
endfunction()

# Man pages from each binary's --help and every command's (help2man), when
# help2man is there; without it the build says so and installs none.
find_program(TC_HELP2MAN help2man)
function(tc_man_pages target component)
  if(NOT TC_HELP2MAN)
    return()
  endif()
  set(_dir ${CMAKE_BINARY_DIR}/man/${target})
  set(_stamp ${_dir}/stamp)
  add_custom_command(
    OUTPUT ${_stamp}
    COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:${target}> -DPROG=${target}
            -DOUT=${_dir} -DHELP2MAN=${TC_HELP2MAN} -P ${CMAKE_SOURCE_DIR}/cmake/ManPages.cmake
    COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
    DEPENDS ${target} ${CMAKE_SOURCE_DIR}/cmake/ManPages.cmake
    COMMENT "man pages of ${target} (help2man)")
  add_custom_target(${target}_man ALL DEPENDS ${_stamp})
  install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component}
          FILES_MATCHING PATTERN "*.1.gz")
endfunction()

if(TRAINCAST_AGENT)
  install(TARGETS agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
  file(GLOB TC_INSTALL_HARNESS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/agent/harness/*.py)
  install(FILES ${TC_INSTALL_HARNESS} DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/harness
          COMPONENT agent)
  file(GLOB TC_INSTALL_MODELS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/data/*.onnx)
  install(FILES ${TC_INSTALL_MODELS} ${CMAKE_SOURCE_DIR}/tests/data/cnn_set.convs DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/models
          COMPONENT agent)
  tc_install_deploy_file(deploy/systemd/traincast-agent@.service agent ${TC_UNIT_DIR})
  tc_install_deploy_file(deploy/config/agent.conf agent ${CMAKE_INSTALL_DATADIR}/traincast/deploy)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/bash-completion/traincast
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME agent
          COMPONENT agent)
  install(FILES ${TC_DOC_SHARED} ${CMAKE_SOURCE_DIR}/docs/trace-protocol.md
                ${CMAKE_SOURCE_DIR}/docs/model-graphs.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/traincast-agent COMPONENT agent)
  tc_man_pages(agent agent)
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
  tc_man_pages(aggregator aggregator)
endif()
