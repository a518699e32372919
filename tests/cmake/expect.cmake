# The checks the CMake script tests share: include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake).

# Fails the script when `got` is not `want`, naming `what`.
function(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got '${got}', want '${want}'")
  endif()
endfunction()

# Fails the script when `got` is `other`, naming `what`.
function(expect_not what got other)
  if("${got}" STREQUAL "${other}")
    message(FATAL_ERROR "${what}: both '${got}'")
  endif()
endfunction()
