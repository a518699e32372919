# Each family's timed code and its method versions, the facts that say which benchmark made a row:
#   gapbench.source.<family>  12 hex digits of a SHA-256 over the family's timed code (below);
#   gapbench.method.<key>     the method version of the family (key: the family) or of one of its
#                             variants (key: family/variant/device), from the methods table.
# Two machines' rows are the same work when their method versions agree (docs/report.md's "Like
# with like only"); the report never looks at the code itself.
#
# The methods table, report/gapbench_report/tables/methods.json, is the lock: per family the
# digest of its timed code when its methods were last decided, and per key the one-line reasons
# its method changed (its version is 1 + their count). Where the tree's digest is not the
# table's (an edit nobody has decided on yet), every version of the family is recorded as
# "<version>+<digest>": such a build's rows pair only with rows of that same code. The lock test
# (cmake.gapbench_methods_lock) fails until a person decides: the same method (set the digest)
# or a new one (set the digest and add a reason): docs/contributing.md#when-the-methods-lock-fails.
#
# A family's timed code: bench/<family>.cpp, bench/<family>.h and bench/<family>_gpu.cpp; every
# file of the repository they reach through #include "..." (from the repository root, as gapbench
# includes), followed through the headers they include in turn; and, for each header reached,
# its implementation beside it (<stem>.cpp, <stem>.cu, <stem>_gpu.cpp). The CPU and the GPU code
# alike, so a CPU-only and a CUDA build of one tree record the same identity. Left out: the
# files that never change what is timed (not_timed_regex below: the machine's facts, the
# results' writing, validation before timing, skip reasons; docs/setup.md names them). What is
# hashed is each file's path and its SHA-256, in path order.
#
# Included from CMakeLists.txt, it adds the generated file to gapbench_fixtures, refreshed at
# every build (rewritten only when a fact changed, so an unchanged tree recompiles nothing), the
# lock test, and the script's own test (tests/cmake/test_gapbench_methods.cmake). As a script:
#   cmake -DSOURCE_DIR=<checkout> -DOUTPUT=<file.cpp> -P cmake/gapbench_methods.cmake  (the facts)
#   cmake -DSOURCE_DIR=<checkout> -DCHECK=ON -P cmake/gapbench_methods.cmake           (the lock)

if(NOT CMAKE_SCRIPT_MODE_FILE)
  set(methods_cpp ${CMAKE_BINARY_DIR}/generated/method_facts.cpp)
  set(methods_command ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DOUTPUT=${methods_cpp} -P ${CMAKE_CURRENT_LIST_FILE})
  execute_process(COMMAND ${methods_command} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "cmake/gapbench_methods.cmake could not write the method facts")
  endif()
  add_custom_target(gapbench_method_facts COMMAND ${methods_command}
                    BYPRODUCTS ${methods_cpp} VERBATIM
                    COMMENT "Hashing each family's timed code")
  target_sources(gapbench_fixtures PRIVATE ${methods_cpp})
  add_dependencies(gapbench_fixtures gapbench_method_facts)
  add_test(NAME cmake.gapbench_methods_lock
           COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DCHECK=ON
                   -P ${CMAKE_CURRENT_LIST_FILE})
  add_test(NAME cmake.gapbench_methods
           COMMAND ${CMAKE_COMMAND} -DWORK=${CMAKE_BINARY_DIR}/test_methods
                   -P ${PROJECT_SOURCE_DIR}/tests/cmake/test_gapbench_methods.cmake)
  set_tests_properties(cmake.gapbench_methods_lock cmake.gapbench_methods PROPERTIES LABELS unit)
  return()
endif()

cmake_minimum_required(VERSION 3.25)  # script mode: IN_LIST and the other current policies
if(NOT SOURCE_DIR OR (NOT OUTPUT AND NOT CHECK))
  message(FATAL_ERROR "usage: cmake -DSOURCE_DIR=<checkout> (-DOUTPUT=<file.cpp> | -DCHECK=ON) "
                      "-P ${CMAKE_CURRENT_LIST_FILE}")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
set(methods_json report/gapbench_report/tables/methods.json)

set(not_timed_regex
    "^(fixtures/(machine|nvml|source_state|doctor_rules|results_file|json_writer|device_probe)"
    "|kernels/base/validate|kernels/onednn_isa)[._]")
string(JOIN "" not_timed_regex ${not_timed_regex})

# The repository files `file` includes with quotes, as paths from the root.
function(quoted_includes file out)
  file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  set(found "")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
      set(included ${CMAKE_MATCH_1})
      if(EXISTS ${SOURCE_DIR}/${included} AND NOT IS_DIRECTORY ${SOURCE_DIR}/${included})
        list(APPEND found ${included})
      endif()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The family's timed files, as the head of this file defines them, sorted.
function(family_files family out)
  set(todo "")
  foreach(name ${family}.cpp ${family}.h ${family}_gpu.cpp)
    if(EXISTS ${SOURCE_DIR}/bench/${name})
      list(APPEND todo bench/${name})
    endif()
  endforeach()
  set(seen "")
  while(todo)
    list(POP_FRONT todo file)
    if(file IN_LIST seen OR file MATCHES "${not_timed_regex}")
      continue()
    endif()
    list(APPEND seen ${file})
    quoted_includes(${file} included)
    list(APPEND todo ${included})
    if(file MATCHES "^(.*)\\.(h|cuh)$")
      foreach(implementation ${CMAKE_MATCH_1}.cpp ${CMAKE_MATCH_1}.cu ${CMAKE_MATCH_1}_gpu.cpp)
        if(EXISTS ${SOURCE_DIR}/${implementation})
          list(APPEND todo ${implementation})
        endif()
      endforeach()
    endif()
  endwhile()
  list(SORT seen)
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# The family's digest: 12 hex digits over its timed files' paths and hashes.
function(family_digest family out)
  family_files(${family} files)
  set(manifest "")
  foreach(file IN LISTS files)
    file(SHA256 ${SOURCE_DIR}/${file} hash)
    string(APPEND manifest "${file} ${hash}\n")
  endforeach()
  string(SHA256 digest "${manifest}")
  string(SUBSTRING ${digest} 0 12 digest)
  set(${out} ${digest} PARENT_SCOPE)
endfunction()

# The families: bench/*.cpp but the executable's own files and the GPU halves.
file(GLOB bench_files RELATIVE ${SOURCE_DIR}/bench ${SOURCE_DIR}/bench/*.cpp)
list(SORT bench_files)
set(families "")
foreach(name IN LISTS bench_files)
  string(REGEX REPLACE "\\.cpp$" "" family ${name})
  if(NOT family MATCHES "^(main|doctor)$" AND NOT family MATCHES "_gpu$")
    list(APPEND families ${family})
  endif()
endforeach()

# The methods table (an empty one where the tree has none), or the one line that says why not.
set(methods "{\"families\": {}}")
if(EXISTS ${SOURCE_DIR}/${methods_json})
  file(READ ${SOURCE_DIR}/${methods_json} methods)
endif()
string(JSON table ERROR_VARIABLE bad GET "${methods}" families)
if(bad)
  message(FATAL_ERROR "${methods_json} is not a methods table ({\"families\": {...}}): ${bad}")
endif()

# Sets `out` to the family's entry in the table, "" where it has none.
function(family_entry family out)
  string(JSON entry ERROR_VARIABLE missing GET "${table}" ${family})
  set(${out} "" PARENT_SCOPE)
  if(NOT missing)
    set(${out} "${entry}" PARENT_SCOPE)
  endif()
endfunction()

# ---- the lock: every family's digest is the table's ------------------------------------------
if(CHECK)
  set(problems "")
  foreach(family IN LISTS families)
    family_digest(${family} digest)
    family_entry(${family} entry)
    set(locked "")
    if(entry)
      string(JSON locked ERROR_VARIABLE bad GET "${entry}" digest)
    endif()
    if(NOT locked STREQUAL digest)
      if(locked)
        set(moved "its timed code changed: digest ${locked} in the table, ${digest} in this tree")
      else()
        set(moved "it has no entry in the table (digest ${digest} in this tree)")
      endif()
      string(APPEND problems "\n${family}: ${moved}. Decide, in ${methods_json}'s \"${family}\":"
        "\n  - the same method (a refactor, a rename, validation, a comment, a new size): set its"
        " \"digest\" to \"${digest}\";"
        "\n  - a new method (what is timed changed): set its \"digest\" to \"${digest}\" and add"
        " a one-line reason to \"changes\", under \"${family}\" (every variant) or under each"
        " variant whose method changed (\"${family}/<variant>/<device>\"): its version goes up"
        " by one, and its rows are no longer compared with rows of the version before, which"
        " quote the reason.")
    endif()
    if(entry)
      string(JSON keys ERROR_VARIABLE bad LENGTH "${entry}" changes)
      if(bad)
        string(APPEND problems "\n${family}: its entry has no \"changes\" object")
        continue()
      endif()
      if(keys GREATER 0)
        math(EXPR last "${keys} - 1")
        foreach(i RANGE ${last})
          string(JSON key MEMBER "${entry}" changes ${i})
          if(NOT key MATCHES "^${family}(/[a-z0-9_]+/(cpu|gpu)(/[a-z0-9_]+:[a-z0-9_]+)?)?$")
            string(APPEND problems "\n${family}: \"${key}\" in its \"changes\" is neither the "
                   "family, one of its variants (${family}/<variant>/<cpu|gpu>) nor a variant's "
                   "rows of one axis (${family}/<variant>/<cpu|gpu>/<axis>:<value>)")
          endif()
          string(JSON reasons LENGTH "${entry}" changes ${key})
          if(reasons GREATER 0)
            math(EXPR r_last "${reasons} - 1")
            foreach(r RANGE ${r_last})
              string(JSON reason GET "${entry}" changes ${key} ${r})
              if(NOT reason MATCHES "[a-z]")
                string(APPEND problems "\n${family}: change ${r} of \"${key}\" gives no reason")
              endif()
            endforeach()
          endif()
        endforeach()
      endif()
    endif()
  endforeach()
  string(JSON count LENGTH "${table}")
  if(count GREATER 0)
    math(EXPR last "${count} - 1")
    foreach(i RANGE ${last})
      string(JSON family MEMBER "${table}" ${i})
      if(NOT family IN_LIST families)
        string(APPEND problems "\n${family}: in the table, but there is no bench/${family}.cpp")
      endif()
    endforeach()
  endif()
  if(problems)
    message(FATAL_ERROR "the methods lock (${methods_json}) does not hold this tree:${problems}\n")
  endif()
  message(STATUS "the methods lock holds: ${families}")
  return()
endif()

# ---- the facts -------------------------------------------------------------------------------
set(entries "")
foreach(family IN LISTS families)
  family_digest(${family} digest)
  string(APPEND entries "      {\"gapbench.source.${family}\", \"${digest}\"},\n")
  family_entry(${family} entry)
  set(locked "")
  set(keys 0)
  if(entry)
    string(JSON locked ERROR_VARIABLE bad GET "${entry}" digest)
    string(JSON keys ERROR_VARIABLE bad LENGTH "${entry}" changes)
    if(bad)
      set(keys 0)
    endif()
  endif()
  set(unlocked "")
  if(NOT locked STREQUAL digest)
    set(unlocked "+${digest}")
  endif()
  set(versions "${family}=1")  # the family's own key is always recorded
  if(keys GREATER 0)
    math(EXPR last "${keys} - 1")
    foreach(i RANGE ${last})
      string(JSON key MEMBER "${entry}" changes ${i})
      string(JSON reasons LENGTH "${entry}" changes ${key})
      math(EXPR version "${reasons} + 1")
      list(FILTER versions EXCLUDE REGEX "^${key}=")
      list(APPEND versions "${key}=${version}")
    endforeach()
  endif()
  foreach(pair IN LISTS versions)
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 key)
    list(GET pair 1 version)
    string(APPEND entries "      {\"gapbench.method.${key}\", \"${version}${unlocked}\"},\n")
  endforeach()
endforeach()

set(text "// Generated by cmake/gapbench_methods.cmake at build time: do not edit.
#include \"fixtures/machine.h\"

namespace gapbench {
std::vector<Fact> method_facts() {
  return {
${entries}  };
}
}  // namespace gapbench
")
include(${CMAKE_CURRENT_LIST_DIR}/gapbench_write_if_changed.cmake)
gapbench_write_if_changed(${OUTPUT} "${text}")
