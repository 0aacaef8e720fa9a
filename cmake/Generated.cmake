# Code generated at build time, never committed:
#  - typed IR nodes and their FlatBuffers decoder, from schema/mlx_delegate.fbs
#  - FlatBuffers readers for the MLX-delegate IR and ExecuTorch's Program container
set(WGML_GEN_DIR ${CMAKE_BINARY_DIR}/gen)
set(WGML_GEN_IR ${WGML_GEN_DIR}/ir)
set(WGML_SCHEMA ${CMAKE_SOURCE_DIR}/schema/mlx_delegate.fbs)

add_custom_command(
  OUTPUT ${WGML_GEN_IR}/nodes.h ${WGML_GEN_IR}/decode_nodes.cpp ${WGML_GEN_IR}/mlx_delegate_relaxed.fbs
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/gen/gen_ir_nodes.py ${WGML_SCHEMA} ${WGML_GEN_IR}
  DEPENDS ${WGML_SCHEMA} ${CMAKE_SOURCE_DIR}/tools/gen/gen_ir_nodes.py
  COMMENT "Generating IR node types from mlx_delegate.fbs")

add_custom_command(
  OUTPUT ${WGML_GEN_IR}/mlx_delegate_relaxed_generated.h
  COMMAND flatbuffers::flatc --cpp --gen-object-api --scoped-enums -o ${WGML_GEN_IR} ${WGML_GEN_IR}/mlx_delegate_relaxed.fbs
  DEPENDS ${WGML_GEN_IR}/mlx_delegate_relaxed.fbs
  COMMENT "flatc: MLX-delegate IR")

add_custom_command(
  OUTPUT ${WGML_GEN_DIR}/frontend/pte/executorch_program_generated.h
  COMMAND flatbuffers::flatc --cpp --gen-object-api --scoped-enums -o ${WGML_GEN_DIR}/frontend/pte ${CMAKE_SOURCE_DIR}/schema/executorch_program.fbs
  DEPENDS ${CMAKE_SOURCE_DIR}/schema/executorch_program.fbs
  COMMENT "flatc: ExecuTorch Program subset")

add_custom_target(wgml_generated DEPENDS
  ${WGML_GEN_IR}/nodes.h
  ${WGML_GEN_IR}/decode_nodes.cpp
  ${WGML_GEN_IR}/mlx_delegate_relaxed_generated.h
  ${WGML_GEN_DIR}/frontend/pte/executorch_program_generated.h)
