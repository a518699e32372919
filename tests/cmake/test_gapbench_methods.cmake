# cmake/gapbench_methods.cmake on a throwaway tree:
#   cmake -DWORK=<empty folder> -P tests/cmake/test_gapbench_methods.cmake
# Every family gets 12 hex digits, each its own; a change to a kernel changes the families that
# include it and no other; a change to the machine's facts or to validation changes none; a new
# include counts; main and doctor are no families. The lock: a comment changed in a timed kernel
# fails it, naming the family and both choices; either choice passes; a new method's reason
# raises the version the build records, and a family whose code nobody decided on records its
# versions with the digest. Any failure is a FATAL_ERROR (exit status 1).
if(NOT WORK)
  message(FATAL_ERROR "usage: cmake -DWORK=<folder> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(script ${CMAKE_CURRENT_LIST_DIR}/../../cmake/gapbench_methods.cmake)
set(tree ${WORK}/tree)
set(out ${WORK}/source_hashes.cpp)
file(REMOVE_RECURSE ${WORK})

file(WRITE ${tree}/bench/alpha.cpp "#include \"bench/alpha.h\"\n#include \"fixtures/machine.h\"\n")
file(WRITE ${tree}/bench/alpha.h "#include \"kernels/shared.h\"\n#include <vector>\n")
file(WRITE ${tree}/bench/beta.cpp "#include \"kernels/beta.h\"\n")
file(WRITE ${tree}/bench/main.cpp "#include \"bench/alpha.h\"\n")
file(WRITE ${tree}/bench/doctor.cpp "#include \"fixtures/machine.h\"\n")
file(WRITE ${tree}/kernels/shared.h "#include \"kernels/base/validate.h\"\nint shared();\n")
file(WRITE ${tree}/kernels/shared.cpp "int shared() { return 1; }\n")
file(WRITE ${tree}/kernels/shared.cu "// GPU half\n")
file(WRITE ${tree}/kernels/beta.h "int beta();\n")
file(WRITE ${tree}/kernels/beta.cpp "int beta() { return 2; }\n")
file(WRITE ${tree}/fixtures/machine.h "int facts();\n")
file(WRITE ${tree}/fixtures/machine.cpp "int facts() { return 3; }\n")
file(WRITE ${tree}/kernels/base/validate.h "int validate();\n")
file(WRITE ${tree}/kernels/base/validate.cpp "int validate() { return 4; }\n")

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

# The machine's facts and the validation before timing are not timed code.
file(WRITE ${tree}/fixtures/machine.cpp "int facts() { return 30; }\n")
file(WRITE ${tree}/kernels/base/validate.cpp "int validate() { return 31; }\n")
hashes()
expect("alpha after the machine facts changed" "${alpha} ${beta}" "${alpha1} ${beta0}")

# A new include: beta now uses the shared kernel.
file(WRITE ${tree}/bench/beta.cpp "#include \"kernels/beta.h\"\n#include \"kernels/shared.h\"\n")
hashes()
expect_not("beta after a new include" ${beta} ${beta0})
expect("alpha after beta's include" ${alpha} ${alpha1})

# ---- the lock --------------------------------------------------------------------------------
set(table ${tree}/report/gapbench_report/tables/methods.json)
# Writes the methods table: alpha's digest and changes, beta locked at its digest.
function(lock alpha_digest alpha_changes)
  file(WRITE ${table} "{\"families\": {
    \"alpha\": {\"digest\": \"${alpha_digest}\", \"changes\": {${alpha_changes}}},
    \"beta\": {\"digest\": \"${beta}\", \"changes\": {}}}}")
endfunction()
# Runs the lock check; sets `status` and `said` (its output).
function(check)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${tree} -DCHECK=ON -P ${script}
                  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(status ${status} PARENT_SCOPE)
  set(said "${out}${err}" PARENT_SCOPE)
endfunction()
# The version the build records for `key`.
function(recorded key version)
  hashes()
  file(READ ${out} text)
  string(REGEX MATCH "\"gapbench\\.method\\.${key}\", \"([^\"]*)\"" _ "${text}")
  set(${version} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

file(WRITE ${tree}/kernels/alpha_only.h "int alpha_only();\n")
file(WRITE ${tree}/kernels/alpha_only.cpp "int alpha_only() { return 5; }\n")
file(WRITE ${tree}/bench/alpha.cpp "#include \"bench/alpha.h\"\n#include \"kernels/alpha_only.h\"\n")
hashes()
lock(${alpha} "")
check()
expect("the lock of the tree as it is" ${status} 0)
recorded(alpha version)
expect("alpha's version, locked without changes" "${version}" 1)

# A comment in a timed kernel: the lock fails, naming the family, its digests and both choices.
set(locked ${alpha})
file(APPEND ${tree}/kernels/alpha_only.cpp "// a comment\n")
hashes()
check()
expect_not("the lock after a comment in a timed kernel" ${status} 0)
foreach(words "alpha: its timed code changed: digest ${locked} in the table, ${alpha} in this"
              "the same method (a refactor, a rename, validation, a comment, a new size): set"
              "a new method (what is timed changed): set its \"digest\" to \"${alpha}\" and add"
              "\"alpha/<variant>/<device>\"")
  string(REPLACE "\n" " " flat "${said}")
  string(REGEX REPLACE "[ ]+" " " flat "${flat}")
  string(FIND "${flat}" "${words}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the lock's message lacks '${words}':\n${said}")
  endif()
endforeach()
if(said MATCHES "beta:")
  message(FATAL_ERROR "the lock names beta, whose code did not change:\n${said}")
endif()
recorded(alpha version)
expect("alpha's version while nobody has decided" "${version}" "1+${alpha}")

# The same method: the digest set, the version kept.
lock(${alpha} "")
check()
expect("the lock after 'the same method'" ${status} 0)
recorded(alpha version)
expect("alpha's version after 'the same method'" "${version}" 1)

# A new method of one variant: its version goes up, the family's stays.
lock(${alpha} "\"alpha/fast/gpu\": [\"the kernel is held now\"]")
check()
expect("the lock after 'a new method'" ${status} 0)
recorded("alpha/fast/gpu" version)
expect("alpha/fast/gpu's version after one change" "${version}" 2)
recorded(alpha version)
expect("alpha's own version beside a variant's change" "${version}" 1)

# What the lock refuses: a key of another family, a change without a reason, a family with no
# bench/ file.
lock(${alpha} "\"beta/fast/gpu\": [\"x\"], \"alpha\": [\"\"]")
check()
expect_not("a lock with another family's key and an empty reason" ${status} 0)
if(NOT said MATCHES "beta/fast/gpu" OR NOT said MATCHES "change 0 of \"alpha\" gives no reason")
  message(FATAL_ERROR "the lock did not name both faults:\n${said}")
endif()
message(STATUS "methods: ok")
