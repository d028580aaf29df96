# The ATen kernel backend (runtime/aten/aten_kernels.h), included from
# src/runtime/CMakeLists.txt. The exec-file reader, the values file and the
# program-order runner are always built; the kernels themselves only when
# libtorch was found (SA_HAVE_TORCH, cmake/torch.cmake), as a plugin that the
# core loads on first use (aten_loader.cpp).
target_sources(sa_runtime PRIVATE ${CMAKE_CURRENT_LIST_DIR}/aten_access.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_allowlist.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_program.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/values_file.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/placement_slots.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_runner.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_run.cpp
                                        ${CMAKE_CURRENT_LIST_DIR}/aten_session.cpp)
target_sources(sa_runtime PRIVATE ${CMAKE_CURRENT_LIST_DIR}/aten_loader.cpp)
target_link_libraries(sa_runtime PUBLIC ${CMAKE_DL_LIBS})
if(SA_HAVE_TORCH)
  # A plugin, loaded only by `run --kernels aten` (Note [ATen plugin]): libtorch's
  # static initialisation costs most of a second per process. It carries its own
  # copy of the core code it uses, so the core is position-independent.
  add_library(swapadvisor_aten MODULE ${CMAKE_CURRENT_LIST_DIR}/aten_kernels.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/aten_values.cpp)
  set_target_properties(swapadvisor_aten PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
  set_property(GLOBAL PROPERTY SA_PIC ON)
  # The runtime's view of src/ (src/CMakeLists.txt), as the runtime's own files.
  target_include_directories(swapadvisor_aten PRIVATE ${PROJECT_BINARY_DIR}/layers/runtime)
  target_link_libraries(swapadvisor_aten PRIVATE sa_runtime ${TORCH_LIBRARIES})
  # Only sa_aten_plugin is exported; the core's copy stays private to the plugin.
  target_link_options(swapadvisor_aten PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined)
  # libtorch's headers are not warning-clean under -Wextra
  target_compile_options(swapadvisor_aten PRIVATE -Wno-unused-parameter -Wno-missing-field-initializers
                                                  -Wno-deprecated-declarations)
  # On the one file that reads it: a build-tree path in every core file's
  # flags would make each checkout's objects differ (no compiler cache hits).
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/aten_loader.cpp TARGET_DIRECTORY sa_runtime
                              PROPERTIES COMPILE_DEFINITIONS
                              SA_ATEN_PLUGIN_PATH="${PROJECT_BINARY_DIR}/libswapadvisor_aten.so")
  if(SA_TORCH_CUDA)
    # Note [ATen on CUDA]: the stream hand-over and the placing allocator.
    target_sources(swapadvisor_aten PRIVATE ${CMAKE_CURRENT_LIST_DIR}/aten_cuda.cpp)
    target_compile_definitions(swapadvisor_aten PRIVATE SA_ATEN_CUDA=1)
  endif()
endif()
