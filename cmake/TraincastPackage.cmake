# Debian packages: `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr (deploy/package.sh does both) writes, from the
# install components of cmake/TraincastInstall.cmake,
#   traincast-common      the harness and the CNN set's weight-free exports
#                         (Architecture: all); both programs depend on it
#   traincast-agent       the agent with the CUDA backend (only in a build
#                         that has it): NVIDIA GPUs and CPUs
#   traincast-agent-cpu   the CPU-only agent, with nothing of CUDA
#   traincast-aggregator  the aggregator
# The two agents install the same files and replace each other. Library
# dependencies come from dpkg-shlibdeps; cmake/PackageLinks.cmake first
# refuses a binary that links a library no Debian package owns (which
# dpkg-shlibdeps, as CPack runs it, would leave out of Depends).
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
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/PackageLinks.cmake)
set(CPACK_COMPONENTS_ALL common)
if(TRAINCAST_AGENT AND TC_HAVE_CUDA)
  list(APPEND CPACK_COMPONENTS_ALL agent agent_cpu)
elseif(TRAINCAST_AGENT)
  list(APPEND CPACK_COMPONENTS_ALL agent_cpu)
endif()
if(TRAINCAST_AGGREGATOR)
  list(APPEND CPACK_COMPONENTS_ALL aggregator)
endif()

set(_tc_common "traincast-common (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_COMMON_PACKAGE_NAME traincast-common)
set(CPACK_DEBIAN_COMMON_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_COMMON_DESCRIPTION "traincast: the PyTorch harness and the CNN set's \
weight-free exports\nThe files of share/traincast that the agent and the aggregator both use: \
the PyTorch\nharness (trace runner, ONNX export) and the torchvision CNN set as weight-free \
ONNX\nexports, so that a CNN is named and described without PyTorch installed.")

set(_tc_agent_description "benchmarks convolutions and traces training on this machine's \
devices\nBenchmarks the convolutions of CNNs with cuDNN (NVIDIA GPUs) or oneDNN (CPUs), \
traces\ntraining through PyTorch, and sends the results to a traincast aggregator.")
set(_tc_agent_recommends
    "python3-torch, python3-torchvision, python3-onnx, libtcmalloc-minimal4, libopenblas0-openmp")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME traincast-agent)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "traincast agent for NVIDIA GPUs and CPUs: \
${_tc_agent_description}\nThe CUDA runtime is linked in; cuDNN, NVRTC and cuBLAS are loaded at \
run time\nfrom the PyTorch the agent runs (or TRAINCAST_CUDNN), and the driver's libcuda\nwhen \
a GPU is used: without them it measures CPUs only. For CPU-only\nmachines traincast-agent-cpu \
has nothing of CUDA.")
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "adduser, python3, ${_tc_common}")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS ${_tc_agent_recommends})
set(CPACK_DEBIAN_AGENT_PACKAGE_CONFLICTS traincast-agent-cpu)
set(CPACK_DEBIAN_AGENT_PACKAGE_REPLACES traincast-agent-cpu)
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)

set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_NAME traincast-agent-cpu)
set(CPACK_COMPONENT_AGENT_CPU_DESCRIPTION "traincast agent for CPUs, without CUDA: \
${_tc_agent_description}\nThis agent is built without the CUDA backend and needs nothing of \
CUDA; it\nmeasures the CPU devices only. traincast-agent measures NVIDIA GPUs too.")
set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_DEPENDS "adduser, python3, ${_tc_common}")
set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_RECOMMENDS ${_tc_agent_recommends})
set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_CONFLICTS traincast-agent)
set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_REPLACES traincast-agent)
set(CPACK_DEBIAN_AGENT_CPU_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)

set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_NAME traincast-aggregator)
set(CPACK_COMPONENT_AGGREGATOR_DESCRIPTION "traincast aggregator: stores agents' results, \
fits and predicts CNN training time\nReceives the agents' results over ZeroMQ, stores them in \
PostgreSQL, fits a per-device\nmodel of the non-conv time and predicts training time on \
every device.")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_DEPENDS "adduser, ${_tc_common}")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_RECOMMENDS "postgresql-client, plplot-driver-cairo")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_SUGGESTS "postgresql")
set(CPACK_DEBIAN_AGGREGATOR_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)

include(CPack)
