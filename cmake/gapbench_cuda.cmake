# Finding nvcc, the CUDA toolkit, cuBLAS and cuDNN, included by CMakeLists.txt. Sets
# GAPBENCH_WITH_CUDA, GAPBENCH_WITH_CUDNN (1 or 0), GAPBENCH_MIN_CUDA_ARCH (the oldest
# architecture built, 0 without CUDA) and the target gapbench::cudnn when cuDNN is found; with
# GAPBENCH_REQUIRE_GPU_LIBRARIES, a configure error unless CUDA, cuBLAS and cuDNN are all found.
# Without nvcc, or with GAPBENCH_CUDA=OFF, every GPU variant reports "skipped: built without CUDA".
include(${CMAKE_CURRENT_LIST_DIR}/gapbench_cudnn.cmake)
set(GAPBENCH_WITH_CUDA 0)
set(GAPBENCH_WITH_CUDNN 0)
set(GAPBENCH_MIN_CUDA_ARCH 0)
if(GAPBENCH_CUDA)
  # Where nvcc comes from, first that exists: CMAKE_CUDA_COMPILER or CUDACXX as given; nvcc on
  # PATH; the toolkit's standard location /usr/local/cuda; the toolkit that `ci/setup --cuda`
  # installed from PyPI's NVIDIA wheels into .venv/cuda (a machine with only a driver).
  # GAPBENCH_IGNORE_SYSTEM_CUDA=1 in the environment skips PATH and /usr/local/cuda, as on such a
  # machine. Given through CUDACXX, so check_language still tries the compiler and falls back to
  # a CPU-only build if it does not work.
  set(wheel_nvcc ${PROJECT_SOURCE_DIR}/.venv/cuda/bin/nvcc)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(nvcc_on_path nvcc NO_CACHE)
    if("$ENV{GAPBENCH_IGNORE_SYSTEM_CUDA}" STREQUAL "1")
      message(STATUS "GAPBENCH_IGNORE_SYSTEM_CUDA=1: ignoring nvcc on PATH and /usr/local/cuda")
      if(EXISTS ${wheel_nvcc})
        set(ENV{CUDACXX} ${wheel_nvcc})
      else()
        set(ENV{CUDACXX} ${PROJECT_SOURCE_DIR}/.venv/cuda/no-nvcc)  # check_language fails: no CUDA
      endif()
    elseif(NOT nvcc_on_path AND EXISTS /usr/local/cuda/bin/nvcc)
      set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    elseif(NOT nvcc_on_path AND EXISTS ${wheel_nvcc})
      set(ENV{CUDACXX} ${wheel_nvcc})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # T4 (Colab) through H100, plus PTX for newer GPUs.
      set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 86-real 89-real 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(GAPBENCH_WITH_CUDA 1)
    # The oldest architecture built, so the probe can skip older GPUs with the reason.
    set(GAPBENCH_MIN_CUDA_ARCH 0)
    foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
      if(arch MATCHES "^([0-9]+)" AND
         (GAPBENCH_MIN_CUDA_ARCH EQUAL 0 OR CMAKE_MATCH_1 LESS GAPBENCH_MIN_CUDA_ARCH))
        set(GAPBENCH_MIN_CUDA_ARCH ${CMAKE_MATCH_1})
      endif()
    endforeach()
    # cuDNN may sit in the toolkit's lib/ beside lib64/, in its own prefix (`ci/setup --cuda`
    # links the pip wheel's as .venv/cudnn), or only inside a Python's packages (PyTorch's
    # nvidia-cudnn-cu13 wheel): the report's Python is asked, then python3 on PATH.
    if(NOT GAPBENCH_CUDNN_ROOT AND CUDAToolkit_BIN_DIR MATCHES "^${PROJECT_SOURCE_DIR}/.venv/"
       AND EXISTS ${PROJECT_SOURCE_DIR}/.venv/cudnn)
      set(GAPBENCH_CUDNN_ROOT ${PROJECT_SOURCE_DIR}/.venv/cudnn)
    endif()
    find_program(python3_on_path python3 NO_CACHE)
    gapbench_find_cudnn(${Python3_EXECUTABLE} ${python3_on_path})
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
      set(GAPBENCH_WITH_CUDNN 1)
      add_library(gapbench::cudnn UNKNOWN IMPORTED)
      set_target_properties(gapbench::cudnn PROPERTIES IMPORTED_LOCATION "${CUDNN_LIBRARY}"
                            INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
      message(STATUS "cuDNN: ${CUDNN_LIBRARY}, from ${GAPBENCH_CUDNN_FROM}")
    else()
      message(STATUS "cuDNN not found: its variants will report skipped (set GAPBENCH_CUDNN_ROOT)")
    endif()
  else()
    message(STATUS "nvcc not found: building the CPU variants only")
  endif()
endif()

if(GAPBENCH_REQUIRE_GPU_LIBRARIES)
  set(with_cublas 0)
  if(TARGET CUDA::cublas AND TARGET CUDA::cublasLt)
    set(with_cublas 1)
  endif()
  gapbench_missing_gpu_libraries(missing ${GAPBENCH_WITH_CUDA} ${with_cublas} ${GAPBENCH_WITH_CUDNN})
  if(missing)
    list(JOIN missing ", " missing)
    message(FATAL_ERROR "GAPBENCH_REQUIRE_GPU_LIBRARIES: not found: ${missing}. A GPU check needs "
                        "them all (cuDNN: set GAPBENCH_CUDNN_ROOT, or install nvidia-cudnn-cu13 in "
                        "the Python that configures).")
  endif()
endif()
