# libtorch for the ATen kernel backend (src/runtime/aten/aten.cmake).
#   SA_WITH_TORCH=AUTO (default): use libtorch when found
#   SA_WITH_TORCH=ON:  fail without it      SA_WITH_TORCH=OFF: never
# Found through find_package(Torch): Debian's libtorch-dev installs
# /usr/lib/x86_64-linux-gnu/cmake/Torch; a pip-installed PyTorch has its own
# (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'), which is
# added to the search path when /usr/bin/python3 (or SA_TORCH_PYTHON) has torch.
set(SA_WITH_TORCH AUTO CACHE STRING "Build the ATen kernel backend with libtorch: AUTO, ON or OFF")
set_property(CACHE SA_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(SA_HAVE_TORCH OFF)
if(NOT SA_WITH_TORCH STREQUAL "OFF" AND NOT SA_SANITIZE AND NOT SA_TSAN AND NOT SA_FUZZ)
  if(NOT Torch_DIR)
    set(SA_TORCH_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python whose torch provides libtorch")
    if(EXISTS "${SA_TORCH_PYTHON}")
      execute_process(COMMAND "${SA_TORCH_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                      OUTPUT_VARIABLE _sa_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                      ERROR_QUIET RESULT_VARIABLE _sa_torch_rc)
      if(_sa_torch_rc EQUAL 0 AND EXISTS "${_sa_torch_prefix}/Torch")
        list(APPEND CMAKE_PREFIX_PATH "${_sa_torch_prefix}")
      endif()
    endif()
  endif()
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(SA_HAVE_TORCH ON)
    # The plugin carries the core's code and shares its types (std::string
    # among them) with the program: a libtorch built with the old C++ ABI
    # cannot be mixed with it.
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      set(SA_HAVE_TORCH OFF)
      set(_sa_torch_why "libtorch at ${Torch_DIR} uses the pre-C++11 string ABI (_GLIBCXX_USE_CXX11_ABI=0)")
      message(WARNING "swapadvisor: not using ${_sa_torch_why}")
    endif()
  endif()
endif()
# The ATen kernels on CUDA (Note [ATen on CUDA]) need a libtorch with CUDA
# and the CUDA backend.
set(SA_TORCH_CUDA OFF)
if(SA_HAVE_TORCH AND SA_HAVE_CUDA AND (TORCH_CUDA_LIBRARIES OR TARGET torch_cuda))
  set(SA_TORCH_CUDA ON)
endif()
if(SA_WITH_TORCH STREQUAL "ON" AND NOT SA_HAVE_TORCH)
  message(FATAL_ERROR "SA_WITH_TORCH=ON but libtorch was not found (apt-get install libtorch-dev, "
                      "or set Torch_DIR) ${_sa_torch_why}")
endif()
message(STATUS "swapadvisor: ATen kernels (libtorch) ${SA_HAVE_TORCH}, on CUDA ${SA_TORCH_CUDA}")

# swapadvisor-capture (python/, docs/capture.md) in the build directory: a
# link to the script, which finds its package beside its real path.
file(CREATE_LINK "${PROJECT_SOURCE_DIR}/python/swapadvisor-capture"
     "${PROJECT_BINARY_DIR}/swapadvisor-capture" SYMBOLIC)
