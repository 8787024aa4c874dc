# Generate C from proto/traincast.proto and the system's onnx.proto at build
# time, into the build tree.
set(TC_PROTO_DIR ${CMAKE_BINARY_DIR}/proto)
file(MAKE_DIRECTORY ${TC_PROTO_DIR} ${TC_PROTO_DIR}/onnx)

set(TC_PROTO_SOURCES)
add_custom_command(
  OUTPUT ${TC_PROTO_DIR}/traincast.pb-c.c ${TC_PROTO_DIR}/traincast.pb-c.h
  COMMAND ${PROTOC_C_EXECUTABLE} --c_out=${TC_PROTO_DIR} -I${CMAKE_SOURCE_DIR}/proto
          ${CMAKE_SOURCE_DIR}/proto/traincast.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/proto/traincast.proto
  COMMENT "protoc-c traincast.proto")
list(APPEND TC_PROTO_SOURCES ${TC_PROTO_DIR}/traincast.pb-c.c)

get_filename_component(TC_ONNX_PROTO_DIR ${TC_ONNX_PROTO} DIRECTORY)
get_filename_component(TC_ONNX_PROTO_ROOT ${TC_ONNX_PROTO_DIR} DIRECTORY)
add_custom_command(
  OUTPUT ${TC_PROTO_DIR}/onnx/onnx.pb-c.c ${TC_PROTO_DIR}/onnx/onnx.pb-c.h
  COMMAND ${PROTOC_C_EXECUTABLE} --c_out=${TC_PROTO_DIR} -I${TC_ONNX_PROTO_ROOT} ${TC_ONNX_PROTO}
  DEPENDS ${TC_ONNX_PROTO}
  COMMENT "protoc-c onnx.proto")
list(APPEND TC_PROTO_SOURCES ${TC_PROTO_DIR}/onnx/onnx.pb-c.c)
