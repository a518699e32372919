# cmake/gapbench_cudnn.cmake in script mode, on a fake Python package and a fake toolkit:
#   cmake -DPYTHON=<python> -DWORK=<empty folder> -P tests/cmake/test_gapbench_cudnn.cmake
# cuDNN is found in a Python's nvidia.cudnn package when it is nowhere else, the toolkit's comes
# first, and a missing GPU library is named. Any failure is a FATAL_ERROR (exit status 1).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/gapbench_cudnn.cmake)

if(NOT PYTHON OR NOT WORK)
  message(FATAL_ERROR "usage: cmake -DPYTHON=<python> -DWORK=<folder> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
file(REMOVE_RECURSE ${WORK})

include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

# A stub cuDNN: a header and a library file, as the nvidia-cudnn-cu13 wheel lays them out (no
# unversioned libcudnn.so there) and as a toolkit does.
function(stub_cudnn include_dir lib_dir lib_name)
  file(WRITE ${include_dir}/cudnn.h "#define CUDNN_MAJOR 9\n")
  file(WRITE ${lib_dir}/${lib_name} "")
endfunction()

# Script mode loads no platform: name libraries as on Linux.
set(CMAKE_FIND_LIBRARY_PREFIXES lib)
set(CMAKE_FIND_LIBRARY_SUFFIXES .so)
# Nothing from this machine may answer: no PATH-derived prefixes, no CMAKE_PREFIX_PATH.
set(ENV{PATH} "/usr/bin:/bin")
unset(ENV{CMAKE_PREFIX_PATH})
unset(ENV{CMAKE_INCLUDE_PATH})
unset(ENV{CMAKE_LIBRARY_PATH})
set(GAPBENCH_CUDNN_ROOT "")
set(CUDAToolkit_INCLUDE_DIRS ${WORK}/toolkit/include)  # a toolkit without cuDNN
set(CUDAToolkit_LIBRARY_DIR ${WORK}/toolkit/lib64)
set(CUDAToolkit_LIBRARY_ROOT ${WORK}/toolkit)
file(MAKE_DIRECTORY ${WORK}/toolkit/include ${WORK}/toolkit/lib64)

function(reset)
  unset(CUDNN_INCLUDE_DIR CACHE)
  unset(CUDNN_LIBRARY CACHE)
  unset(GAPBENCH_CUDNN_SOURCE CACHE)
endfunction()

# 1. No cuDNN anywhere, no package: not found, and no source named.
set(ENV{PYTHONPATH} ${WORK}/empty-site)
reset()
gapbench_find_cudnn(${PYTHON})
expect("nothing anywhere: header" "${CUDNN_INCLUDE_DIR}" "CUDNN_INCLUDE_DIR-NOTFOUND")
expect("nothing anywhere: source" "${GAPBENCH_CUDNN_FROM}" "")

# 2. Only in a Python's nvidia.cudnn package (regular packages here, so that no nvidia package
# elsewhere on that Python's path can shadow the fake one): found there.
set(site ${WORK}/site)
file(MAKE_DIRECTORY ${site}/nvidia/cudnn/include ${site}/nvidia/cudnn/lib)
file(WRITE ${site}/nvidia/__init__.py "")
file(WRITE ${site}/nvidia/cudnn/__init__.py "")
stub_cudnn(${site}/nvidia/cudnn/include ${site}/nvidia/cudnn/lib libcudnn.so.9)
set(ENV{PYTHONPATH} ${site})
reset()
gapbench_find_cudnn(${PYTHON} ${PYTHON})
expect("python only: header" "${CUDNN_INCLUDE_DIR}" "${site}/nvidia/cudnn/include")
expect("python only: library" "${CUDNN_LIBRARY}" "${site}/nvidia/cudnn/lib/libcudnn.so.9")
if(NOT GAPBENCH_CUDNN_FROM MATCHES "nvidia.cudnn package")
  message(FATAL_ERROR "python only: the source is '${GAPBENCH_CUDNN_FROM}'")
endif()

# A later configure finds them in the cache, and still says where they came from.
gapbench_find_cudnn(${PYTHON})
if(NOT GAPBENCH_CUDNN_FROM MATCHES "nvidia.cudnn package")
  message(FATAL_ERROR "reconfigured: the source is '${GAPBENCH_CUDNN_FROM}'")
endif()

# 3. A Python that cannot answer is passed over for the next one.
reset()
gapbench_find_cudnn(${WORK}/no-such-python ${PYTHON})
expect("second python: library" "${CUDNN_LIBRARY}" "${site}/nvidia/cudnn/lib/libcudnn.so.9")

# 4. In the toolkit too: the toolkit's comes first. (A new folder: CMake remembers the contents
# of folders it searched inside a build tree, where ctest runs this.)
file(MAKE_DIRECTORY ${WORK}/toolkit2/include ${WORK}/toolkit2/lib64)
stub_cudnn(${WORK}/toolkit2/include ${WORK}/toolkit2/lib64 libcudnn.so)
set(CUDAToolkit_INCLUDE_DIRS ${WORK}/toolkit2/include)
set(CUDAToolkit_LIBRARY_DIR ${WORK}/toolkit2/lib64)
set(CUDAToolkit_LIBRARY_ROOT ${WORK}/toolkit2)
reset()
gapbench_find_cudnn(${PYTHON})
expect("toolkit first: header" "${CUDNN_INCLUDE_DIR}" "${WORK}/toolkit2/include")
expect("toolkit first: library" "${CUDNN_LIBRARY}" "${WORK}/toolkit2/lib64/libcudnn.so")

# 5. What GAPBENCH_REQUIRE_GPU_LIBRARIES refuses.
gapbench_missing_gpu_libraries(missing 1 1 1)
expect("all there" "${missing}" "")
gapbench_missing_gpu_libraries(missing 1 1 0)
expect("no cuDNN" "${missing}" "cuDNN")
gapbench_missing_gpu_libraries(missing 1 0 0)
expect("no cuBLAS, no cuDNN" "${missing}" "cuBLAS;cuDNN")
gapbench_missing_gpu_libraries(missing 0 0 0)
expect("no CUDA" "${missing}" "CUDA (no usable nvcc)")

file(REMOVE_RECURSE ${WORK})
message(STATUS "gapbench_cudnn: every case passed")
