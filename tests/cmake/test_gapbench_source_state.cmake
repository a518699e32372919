# cmake/gapbench_source_state.cmake on throwaway git repositories:
#   cmake -DGIT_EXECUTABLE=<git> -DWORK=<empty folder> -P tests/cmake/test_gapbench_source_state.cmake
# The commit and "clean" in a clean checkout, "dirty" with an untracked file, "unknown" outside a
# checkout and outside any repository (or $GAPBENCH_SOURCE_COMMIT), and the file left untouched when nothing changed (so an
# unchanged tree recompiles nothing). Any failure is a FATAL_ERROR (exit status 1).
if(NOT GIT_EXECUTABLE OR NOT WORK)
  message(FATAL_ERROR "usage: cmake -DGIT_EXECUTABLE=<git> -DWORK=<folder> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
set(script ${CMAKE_CURRENT_LIST_DIR}/../../cmake/gapbench_source_state.cmake)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/repo ${WORK}/plain)
set(out ${WORK}/source_state.cpp)

function(git)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${WORK}/repo -c user.name=t -c user.email=t@t
                          -c commit.gpgsign=false ${ARGN}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "git ${ARGN}: ${status}")
  endif()
  set(git_output "${output}" PARENT_SCOPE)
endfunction()

function(state source_dir)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${source_dir} -DOUTPUT=${out}
                          -DGIT_EXECUTABLE=${GIT_EXECUTABLE} -P ${script}
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the script failed (${status}) on ${source_dir}")
  endif()
  file(READ ${out} text)
  string(REGEX MATCH "source_commit\\(\\) { return \"([^\"]*)\"" _ "${text}")
  set(commit "${CMAKE_MATCH_1}" PARENT_SCOPE)
  string(REGEX MATCH "source_tree\\(\\) { return \"([^\"]*)\"" _ "${text}")
  set(tree "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/expect.cmake)

git(init -q)
file(WRITE ${WORK}/repo/a.cpp "int a;\n")
git(add a.cpp)
git(commit -q -m one)
git(rev-parse HEAD)
set(head ${git_output})

unset(ENV{GAPBENCH_SOURCE_COMMIT})
state(${WORK}/repo)
expect("clean checkout: commit" "${commit}" "${head}")
expect("clean checkout: tree" "${tree}" "clean")

file(TIMESTAMP ${out} before "%s")
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
state(${WORK}/repo)
file(TIMESTAMP ${out} after "%s")
expect("unchanged state: the file's time" "${after}" "${before}")

file(WRITE ${WORK}/repo/new.cpp "int b;\n")
state(${WORK}/repo)
expect("untracked file: commit" "${commit}" "${head}")
expect("untracked file: tree" "${tree}" "dirty")
file(MAKE_DIRECTORY ${WORK}/repo/results/baselines)
file(REMOVE ${WORK}/repo/new.cpp)
file(WRITE ${WORK}/repo/results/baselines/x.json "{}\n")
state(${WORK}/repo)
expect("a new baseline only: tree" "${tree}" "clean")

state(${WORK}/repo/results)
expect("a folder inside a checkout: commit" "${commit}" "unknown")
state(${WORK}/plain)
expect("no checkout: commit" "${commit}" "unknown")
expect("no checkout: tree" "${tree}" "unknown")
set(ENV{GAPBENCH_SOURCE_COMMIT} "0123abcd")
state(${WORK}/plain)
expect("no checkout, GAPBENCH_SOURCE_COMMIT: commit" "${commit}" "0123abcd")
expect("no checkout, GAPBENCH_SOURCE_COMMIT: tree" "${tree}" "unknown")
# Outside any repository at all (an exported tree): WORK sits inside this build's checkout, so
# git is told not to look above WORK, and finds nothing.
set(ENV{GIT_CEILING_DIRECTORIES} ${WORK})
state(${WORK}/plain)
expect("outside any repository, GAPBENCH_SOURCE_COMMIT: commit" "${commit}" "0123abcd")
unset(ENV{GAPBENCH_SOURCE_COMMIT})
state(${WORK}/plain)
expect("outside any repository: commit" "${commit}" "unknown")
expect("outside any repository: tree" "${tree}" "unknown")
unset(ENV{GIT_CEILING_DIRECTORIES})
message(STATUS "gapbench_source_state: all cases passed")
