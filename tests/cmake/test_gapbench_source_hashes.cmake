# cmake/gapbench_source_hashes.cmake on a throwaway tree:
#   cmake -DWORK=<empty folder> -P tests/cmake/test_gapbench_source_hashes.cmake
# Every family gets 12 hex digits, each its own; a change to a kernel changes the families that
# include it and no other; a change to the machine's facts changes none; a new include counts;
# main and doctor are no families. Any failure is a FATAL_ERROR (exit status 1).
if(NOT WORK)
  message(FATAL_ERROR "usage: cmake -DWORK=<folder> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(script ${CMAKE_CURRENT_LIST_DIR}/../../cmake/gapbench_source_hashes.cmake)
set(tree ${WORK}/tree)
set(out ${WORK}/source_hashes.cpp)
file(REMOVE_RECURSE ${WORK})

file(WRITE ${tree}/bench/alpha.cpp "#include \"bench/alpha.h\"\n#include \"fixtures/machine.h\"\n")
file(WRITE ${tree}/bench/alpha.h "#include \"kernels/shared.h\"\n#include <vector>\n")
file(WRITE ${tree}/bench/beta.cpp "#include \"kernels/beta.h\"\n")
file(WRITE ${tree}/bench/main.cpp "#include \"bench/alpha.h\"\n")
file(WRITE ${tree}/bench/doctor.cpp "#include \"fixtures/machine.h\"\n")
file(WRITE ${tree}/kernels/shared.h "int shared();\n")
file(WRITE ${tree}/kernels/shared.cpp "int shared() { return 1; }\n")
file(WRITE ${tree}/kernels/shared.cu "// GPU half\n")
file(WRITE ${tree}/kernels/beta.h "int beta();\n")
file(WRITE ${tree}/kernels/beta.cpp "int beta() { return 2; }\n")
file(WRITE ${tree}/fixtures/machine.h "int facts();\n")
file(WRITE ${tree}/fixtures/machine.cpp "int facts() { return 3; }\n")

# Runs the script; sets alpha and beta to the two hashes.
function(hashes)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${tree} -DOUTPUT=${out} -P ${script}
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the script failed (${status})")
  endif()
  file(READ ${out} text)
  if(text MATCHES "source\\.(main|doctor)")
    message(FATAL_ERROR "main or doctor counted as a family:\n${text}")
  endif()
  foreach(family alpha beta)
    string(REGEX MATCH "\"gapbench\\.source\\.${family}\", \"([0-9a-f]*)\"" _ "${text}")
    set(hash "${CMAKE_MATCH_1}")  # the next MATCHES resets CMAKE_MATCH_1
    string(LENGTH "${hash}" digits)
    if(NOT hash MATCHES "^[0-9a-f]+$" OR NOT digits EQUAL 12)
      message(FATAL_ERROR "no 12-digit hash for ${family}:\n${text}")
    endif()
    set(${family} ${hash} PARENT_SCOPE)
  endforeach()
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

hashes()
set(alpha0 ${alpha})
set(beta0 ${beta})
expect_not("two families" ${alpha} ${beta})
hashes()
expect("the same tree again" "${alpha} ${beta}" "${alpha0} ${beta0}")

# A kernel's implementation, reached through its header: its family only.
file(WRITE ${tree}/kernels/shared.cpp "int shared() { return 10; }\n")
hashes()
expect_not("alpha after its kernel changed" ${alpha} ${alpha0})
expect("beta after alpha's kernel changed" ${beta} ${beta0})
set(alpha1 ${alpha})

# The GPU half counts too.
file(WRITE ${tree}/kernels/shared.cu "// GPU half, changed\n")
hashes()
expect_not("alpha after its .cu changed" ${alpha} ${alpha1})
set(alpha1 ${alpha})

# The machine's facts are not benchmark code.
file(WRITE ${tree}/fixtures/machine.cpp "int facts() { return 30; }\n")
hashes()
expect("alpha after the machine facts changed" "${alpha} ${beta}" "${alpha1} ${beta0}")

# A new include: beta now uses the shared kernel.
file(WRITE ${tree}/bench/beta.cpp "#include \"kernels/beta.h\"\n#include \"kernels/shared.h\"\n")
hashes()
expect_not("beta after a new include" ${beta} ${beta0})
expect("alpha after beta's include" ${alpha} ${alpha1})
message(STATUS "source hashes: ok")
