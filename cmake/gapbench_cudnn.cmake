# Finding cuDNN, for cmake/gapbench_cuda.cmake and its test (tests/cmake/test_gapbench_cudnn.cmake,
# which runs these functions in script mode with a fake Python package).

# The folder of `python`'s nvidia.cudnn package (include/ and lib/ inside), or "" in `out`.
function(gapbench_python_cudnn_dir python out)
  set(${out} "" PARENT_SCOPE)
  if(NOT python)
    return()
  endif()
  # A namespace package in the cu13 wheel (no __init__.py): its __path__, not its __file__.
  execute_process(
    COMMAND ${python} -c "import nvidia.cudnn as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE dir RESULT_VARIABLE status ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE
    TIMEOUT 60)
  if(status EQUAL 0 AND IS_DIRECTORY "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

# Sets CUDNN_INCLUDE_DIR and CUDNN_LIBRARY (cached; -NOTFOUND when absent) and, in the caller's
# scope, GAPBENCH_CUDNN_FROM: where they came from, for the configure log (cached as well, so
# that a later configure, which finds them in the cache, still says where). Looks in
# GAPBENCH_CUDNN_ROOT, the CUDA toolkit (the CUDAToolkit_* variables) and CMake's usual places,
# and only when cuDNN is in none of them, in the nvidia.cudnn package of each Python given, in
# turn: the nvidia-cudnn-cu13 wheel PyTorch installs, on many machines (the GPU machines this
# project is lent among them) the only cuDNN there is.
function(gapbench_find_cudnn)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND GAPBENCH_CUDNN_SOURCE)
    set(GAPBENCH_CUDNN_FROM "${GAPBENCH_CUDNN_SOURCE}" PARENT_SCOPE)
    return()
  endif()
  find_path(CUDNN_INCLUDE_DIR cudnn.h
            HINTS ${GAPBENCH_CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
            PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
               HINTS ${GAPBENCH_CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64)
  set(from "")
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(from "GAPBENCH_CUDNN_ROOT, the toolkit or CMake's usual places")
  endif()
  list(REMOVE_DUPLICATES ARGN)
  foreach(python IN LISTS ARGN)
    if(from)
      break()
    endif()
    gapbench_python_cudnn_dir("${python}" dir)
    if(NOT dir)
      continue()
    endif()
    # Header and library from the same package, never one of them from elsewhere.
    unset(CUDNN_INCLUDE_DIR CACHE)
    unset(CUDNN_LIBRARY CACHE)
    unset(CUDNN_INCLUDE_DIR)
    unset(CUDNN_LIBRARY)
    find_path(CUDNN_INCLUDE_DIR cudnn.h PATHS ${dir}/include NO_DEFAULT_PATH)
    find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9 PATHS ${dir}/lib NO_DEFAULT_PATH)
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
      set(from "${python}'s nvidia.cudnn package (${dir})")
    endif()
  endforeach()
  set(GAPBENCH_CUDNN_SOURCE "${from}" CACHE INTERNAL "where cuDNN was found")
  set(GAPBENCH_CUDNN_FROM "${from}" PARENT_SCOPE)
endfunction()

# The GPU libraries a build lacks, by name, in `out` (empty when it has them all): what
# GAPBENCH_REQUIRE_GPU_LIBRARIES (ci/gpu-check sets it) turns into a configure error.
function(gapbench_missing_gpu_libraries out with_cuda with_cublas with_cudnn)
  set(missing "")
  if(NOT with_cuda)
    list(APPEND missing "CUDA (no usable nvcc)")
  else()
    if(NOT with_cublas)
      list(APPEND missing "cuBLAS")
    endif()
    if(NOT with_cudnn)
      list(APPEND missing "cuDNN")
    endif()
  endif()
  set(${out} "${missing}" PARENT_SCOPE)
endfunction()
