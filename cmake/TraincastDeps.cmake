# Every dependency except CUDA. A missing one is a configure error that names
# the Debian package to install (deploy/setup.sh installs all of them).
find_package(PkgConfig REQUIRED)

macro(tc_require_pkg var module debian)
  pkg_check_modules(${var} IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "traincast needs ${module}: install the Debian package '${debian}' "
                        "(or run deploy/setup.sh)")
  endif()
endmacro()

tc_require_pkg(ZMQ libzmq libzmq3-dev)
tc_require_pkg(PROTOBUFC libprotobuf-c libprotobuf-c-dev)
tc_require_pkg(SODIUM libsodium libsodium-dev)
tc_require_pkg(JANSSON jansson libjansson-dev)
tc_require_pkg(ZLIB zlib zlib1g-dev)
if(TRAINCAST_AGGREGATOR)
  tc_require_pkg(LIBPQ libpq libpq-dev)
  tc_require_pkg(GSL gsl libgsl-dev)
  tc_require_pkg(PLPLOT plplot libplplot-dev)
endif()

find_program(PROTOC_C_EXECUTABLE protoc-c)
if(NOT PROTOC_C_EXECUTABLE)
  message(FATAL_ERROR "traincast needs protoc-c: install the Debian package 'protobuf-c-compiler'")
endif()

# Debian's dnnl-config.cmake insists on OpenCL headers (its GPU runtime), so
# oneDNN is found directly.
if(TRAINCAST_AGENT)
  find_path(TC_DNNL_INCLUDE oneapi/dnnl/dnnl.h)
  find_library(TC_DNNL_LIBRARY dnnl)
  if(NOT TC_DNNL_INCLUDE OR NOT TC_DNNL_LIBRARY)
    message(FATAL_ERROR "traincast needs oneDNN: install the Debian package 'libdnnl-dev'")
  endif()
  add_library(tc_dnnl INTERFACE)
  target_include_directories(tc_dnnl INTERFACE ${TC_DNNL_INCLUDE})
  target_link_libraries(tc_dnnl INTERFACE ${TC_DNNL_LIBRARY})
endif()

find_file(TC_ONNX_PROTO onnx/onnx.proto PATHS /usr/include /usr/local/include)
if(NOT TC_ONNX_PROTO)
  message(FATAL_ERROR "traincast needs onnx.proto: install the Debian package 'libonnx-dev'")
endif()

if(TRAINCAST_TESTS)
  pkg_check_modules(CRITERION IMPORTED_TARGET criterion)
  if(NOT CRITERION_FOUND)
    message(FATAL_ERROR "the test suite needs Criterion: install the Debian package "
                        "'libcriterion-dev' or configure with -DTRAINCAST_TESTS=OFF")
  endif()
endif()

find_package(Threads REQUIRED)
