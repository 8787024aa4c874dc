# Debian packages, one per role: `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr (deploy/package.sh does both) writes
# traincast-agent_VERSION_ARCH.deb and traincast-aggregator_VERSION_ARCH.deb
# from the install components of cmake/TraincastInstall.cmake. Library
# dependencies come from dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME traincast)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR traincast)
set(CPACK_PACKAGE_CONTACT "traincast maintainers <traincast@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "predict CNN training time on every device of a fleet")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.org/traincast")
set(CPACK_COMPONENTS_ALL)
if(TRAINCAST_AGENT)
  list(APPEND CPACK_COMPONENTS_ALL agent)
endif()
if(TRAINCAST_AGGREGATOR)
  list(APPEND CPACK_COMPONENTS_ALL aggregator)
endif()

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME traincast-agent)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "traincast agent: benchmarks convolutions and traces \
training on this machine's devices\nBenchmarks the convolutions of CNNs with cuDNN (NVIDIA \
GPUs) or oneDNN (CPUs), traces training\nthrough PyTorch, and sends the results to a \
traincast aggregator.")
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "adduser, python3")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS
    "python3-torch, python3-torchvision, python3-onnx, libtcmalloc-minimal4, libopenblas0-openmp")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)

set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_NAME traincast-aggregator)
set(CPACK_COMPONENT_AGGREGATOR_DESCRIPTION "traincast aggregator: stores agents' results, \
fits and predicts CNN training time\nReceives the agents' results over ZeroMQ, stores them in \
PostgreSQL, fits a per-device\nmodel of the non-conv time and predicts training time on \
every device.")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_RECOMMENDS "postgresql-client, plplot-driver-cairo")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_SUGGESTS "postgresql")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)

include(CPack)
