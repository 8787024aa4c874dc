# `cmake --install build [--prefix /usr/local]`: the two binaries, the
# PyTorch harness (trace runner, ONNX export) and the committed weight-free
# ONNX exports of the CNN set, for the systemd units in deploy/systemd.
# The binaries look for the harness and the exports in the source tree they
# were built from unless TRAINCAST_HARNESS_DIR and TRAINCAST_DATA_DIR say
# otherwise; the units set both to the installed copies below.
include(GNUInstallDirs)
install(TARGETS agent aggregator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB TC_INSTALL_HARNESS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/agent/harness/*.py)
install(FILES ${TC_INSTALL_HARNESS} DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/harness)
file(GLOB TC_INSTALL_MODELS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/data/*.onnx)
install(FILES ${TC_INSTALL_MODELS} DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/models)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/traincast-aggregator.service
              ${CMAKE_SOURCE_DIR}/deploy/systemd/traincast-agent@.service
              ${CMAKE_SOURCE_DIR}/deploy/config/aggregator.conf
              ${CMAKE_SOURCE_DIR}/deploy/config/agent.conf
        DESTINATION ${CMAKE_INSTALL_DATADIR}/traincast/deploy)
install(FILES ${CMAKE_SOURCE_DIR}/docs/operator-guide.md ${CMAKE_SOURCE_DIR}/docs/user-guide.md
              ${CMAKE_SOURCE_DIR}/docs/transport.md ${CMAKE_SOURCE_DIR}/docs/trace-protocol.md
              ${CMAKE_SOURCE_DIR}/docs/fitting.md ${CMAKE_SOURCE_DIR}/docs/models.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
