# The ATen kernel backend (runtime/aten_kernels.h), included from
# src/runtime/CMakeLists.txt. The exec-file reader, the values file and the
# program-order runner are always built; the kernels themselves only when
# libtorch was found (SA_HAVE_TORCH, cmake/torch.cmake), in their own library
# so that libtorch's flags reach only that translation unit.
target_sources(swapadvisor_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/aten_program.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/values_file.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_runner.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_run.cpp)
if(SA_HAVE_TORCH)
  add_library(swapadvisor_aten STATIC ${CMAKE_CURRENT_LIST_DIR}/aten_kernels.cpp)
  target_include_directories(swapadvisor_aten PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(swapadvisor_aten PUBLIC ${TORCH_LIBRARIES} PRIVATE nlohmann_json::nlohmann_json
                                                                           fmt::fmt)
  # libtorch's headers are not warning-clean under -Wextra
  target_compile_options(swapadvisor_aten PRIVATE -Wno-unused-parameter -Wno-missing-field-initializers
                                                  -Wno-deprecated-declarations)
  target_link_libraries(swapadvisor_core PUBLIC swapadvisor_aten)
else()
  target_sources(swapadvisor_core PRIVATE ${CMAKE_CURRENT_LIST_DIR}/aten_stub.cpp)
endif()
