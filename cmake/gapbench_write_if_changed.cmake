# gapbench_write_if_changed(FILE TEXT): writes a generated source only when its text changed, so
# that a configure or build that regenerates it rebuilds nothing that did not change. Included by
# the scripts that generate sources at build time (gapbench_source_state, gapbench_methods).
function(gapbench_write_if_changed file text)
  if(EXISTS ${file})
    file(READ ${file} old)
  else()
    set(old "")
  endif()
  if(NOT old STREQUAL text)
    file(WRITE ${file} "${text}")
  endif()
endfunction()
