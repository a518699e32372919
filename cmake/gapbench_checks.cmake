# The checks beside the C++ unit tests (those are in tests/CMakeLists.txt), included by
# CMakeLists.txt after them: the report's, the CI's and the probe's pytest suites, the lint of the
# CI files, of the C++ formatting and of the layering, the cmake/ scripts' own test, the smoke runs
# of the real executable, and `ctest -L bench`, the benchmark run proper.

# gapbench's Python: pytest, from the virtual environment ci/setup makes, with this checkout's
# packages first on the path: gapbench_ci (ci/) and gapbench_report (report/).
set(report_env "PYTHONPATH=${PROJECT_SOURCE_DIR}/ci:${PROJECT_SOURCE_DIR}/report"
    "PYTHONDONTWRITEBYTECODE=1" "MPLBACKEND=Agg")
# The report's suite and the CI's: both test packages are named `tests`, so each runs in a
# process of its own (ci/tests reuses report/tests' helpers through its package path).
add_test(NAME report.pytest COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider tests
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/report)
add_test(NAME ci.pytest COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider tests
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/ci)
# GAPBENCH_BINARY: the README's test checks gapbench's flags against this build's --help, and
# the quick GPU estimate lists this build's rows.
set_tests_properties(report.pytest ci.pytest PROPERTIES LABELS unit
                     ENVIRONMENT "${report_env};GAPBENCH_BINARY=$<TARGET_FILE:gapbench>")

# The framework probe (probe/): its unit tests with a fake framework, and a real quick run with
# TensorFlow's CPU build from `ci/setup --tensorflow` (.venv-tf), checked as the report checks a
# family's file. Without .venv-tf the real run skips, saying so; under CI=true it fails instead.
add_test(NAME probe.pytest COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider tests
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/probe)
add_test(NAME probe.tensorflow_quick
         COMMAND tests/ci_checks.sh probe-tensorflow ${Python3_EXECUTABLE}
                 ${CMAKE_BINARY_DIR}/probe-tensorflow $<TARGET_FILE:gapbench>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# The probe's shapes come from gapbench's list, committed as probe/gapbench_probe/
# gapbench_benchmarks.txt: this fails, naming each line, where the built gapbench lists otherwise.
add_test(NAME probe.shapes_match_gapbench
         COMMAND ${Python3_EXECUTABLE} -m gapbench_probe.gapbench_list --check
                 $<TARGET_FILE:gapbench>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/probe)
set_tests_properties(probe.pytest probe.tensorflow_quick probe.shapes_match_gapbench
                     PROPERTIES LABELS unit ENVIRONMENT "${report_env}")
# Its timings are not judged, but it takes both cores for about a minute.
set_tests_properties(probe.tensorflow_quick PROPERTIES SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
                     TIMEOUT 600)

# The CI files: the nightly workflow (actionlint, from ci/setup's .venv), the bash scripts
# (shellcheck), and the test-only slowdown hook compiled in only when GAPBENCH_TEST_INJECT is ON.
get_filename_component(python_bin_dir ${Python3_EXECUTABLE} DIRECTORY)
add_test(NAME ci.actionlint COMMAND tests/ci_checks.sh actionlint ${python_bin_dir}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME ci.shellcheck COMMAND tests/ci_checks.sh shellcheck
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
if(GAPBENCH_TEST_INJECT)
  set(inject_state ON)
else()
  set(inject_state OFF)
endif()
add_test(NAME ci.inject_hook
         COMMAND tests/ci_checks.sh inject-hook $<TARGET_FILE:gapbench> ${inject_state}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(ci.actionlint ci.shellcheck ci.inject_hook PROPERTIES LABELS unit
                     SKIP_RETURN_CODE 77)

# The C, C++ and CUDA files as .clang-format writes them (clang-format from ci/setup's apt
# packages). Without it the test skips, saying so; under CI=true it fails instead.
find_program(GAPBENCH_CLANG_FORMAT clang-format)
add_test(NAME lint.clang-format
         COMMAND tests/ci_checks.sh clang-format "${GAPBENCH_CLANG_FORMAT}"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.clang-format PROPERTIES LABELS unit SKIP_RETURN_CODE 77)

# The Python of report/, ci/ and probe/ as the one lint configuration wants it (ruff, from ci/setup's
# .venv). Without it the test skips, saying so; under CI=true it fails instead.
add_test(NAME lint.ruff COMMAND tests/ci_checks.sh ruff ${python_bin_dir}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.ruff PROPERTIES LABELS unit SKIP_RETURN_CODE 77)

# cuDNN found in a Python's nvidia.cudnn package when it is nowhere else, and the GPU libraries
# GAPBENCH_REQUIRE_GPU_LIBRARIES requires (cmake/gapbench_cudnn.cmake in script mode).
add_test(NAME cmake.gapbench_cudnn
         COMMAND ${CMAKE_COMMAND} -DPYTHON=${Python3_EXECUTABLE}
                 -DWORK=${CMAKE_BINARY_DIR}/cmake-test-cudnn
                 -P ${PROJECT_SOURCE_DIR}/tests/cmake/test_gapbench_cudnn.cmake)
set_tests_properties(cmake.gapbench_cudnn PROPERTIES LABELS unit)

# The source's commit and tree state (cmake/gapbench_source_state.cmake in script mode).
find_package(Git QUIET)
if(GIT_EXECUTABLE)
  add_test(NAME cmake.gapbench_source_state
           COMMAND ${CMAKE_COMMAND} -DGIT_EXECUTABLE=${GIT_EXECUTABLE}
                   -DWORK=${CMAKE_BINARY_DIR}/cmake-test-source-state
                   -P ${PROJECT_SOURCE_DIR}/tests/cmake/test_gapbench_source_state.cmake)
  set_tests_properties(cmake.gapbench_source_state PROPERTIES LABELS unit)
endif()

# The layering: the tree's includes point down, the check catches one that does not, and the
# compiler refuses it with a kernels/ target's own include directories.
add_test(NAME ci.layering COMMAND tests/ci_checks.sh layering
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME ci.layering_check_catches COMMAND tests/ci_checks.sh layering tests/data/layering
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(ci.layering_check_catches PROPERTIES
  PASS_REGULAR_EXPRESSION "wrong-way include: kernels/includes_fixtures.cpp: #include \"fixtures/harness.h\"")
add_test(NAME ci.layering_compile
         COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -fsyntax-only
                 "-I$<JOIN:$<TARGET_PROPERTY:gapbench_kernels,INCLUDE_DIRECTORIES>,;-I>"
                 ${PROJECT_SOURCE_DIR}/tests/data/layering/kernels/includes_fixtures.cpp
         COMMAND_EXPAND_LISTS)
set_tests_properties(ci.layering_compile PROPERTIES
  PASS_REGULAR_EXPRESSION "fixtures/harness.h: No such file")
set_tests_properties(ci.layering ci.layering_check_catches ci.layering_compile PROPERTIES
                     LABELS unit)
# ci/baseline, ci/nightly and compare end to end on the real executable, one small filter.
foreach(tool IN ITEMS baseline nightly compare)
  add_test(NAME smoke.ci_${tool}
           COMMAND ${Python3_EXECUTABLE} ci/tests/smoke_ci.py ${tool} $<TARGET_FILE:gapbench>
                   ${CMAKE_BINARY_DIR}/smoke/ci_${tool}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(smoke.ci_${tool} PROPERTIES LABELS smoke RUN_SERIAL TRUE
                       ENVIRONMENT "${report_env}")
endforeach()

# A real fleet run through a real Slurm: a one-node cluster on this machine, two tasks of a small
# filter, `gapbench-ci fleet status` and `gapbench-report fleet`. Skips without Slurm (ci/setup
# --fleet installs it); under CI=true that is a failure.
add_test(NAME smoke.fleet_slurm
         COMMAND ${Python3_EXECUTABLE} ci/tests/smoke_fleet.py $<TARGET_FILE:gapbench>
                 ${CMAKE_BINARY_DIR}/smoke/fleet_slurm
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(smoke.fleet_slurm PROPERTIES LABELS smoke RUN_SERIAL TRUE TIMEOUT 180
                     SKIP_RETURN_CODE 77 ENVIRONMENT "${report_env}")

add_test(NAME smoke.doctor COMMAND gapbench doctor)
# doctor --json parses, its numbers are numbers and each finding has an id and a severity.
add_test(NAME smoke.doctor_json
         COMMAND sh -c "\"$1\" doctor --json | \"$2\" -c \"$3\""
                 sh $<TARGET_FILE:gapbench> ${Python3_EXECUTABLE}
                 "import json,sys; from gapbench_report.core.catalogue import SEVERITIES; d=json.load(sys.stdin); f=d['facts']; assert isinstance(f['cpu.cores'], int), f['cpu.cores']; assert isinstance(f['machine.id'], str); assert all(set(x) == {'id', 'severity', 'text'} and x['severity'] in SEVERITIES for x in d['findings']), d['findings']")
set_tests_properties(smoke.doctor smoke.doctor_json PROPERTIES LABELS smoke)
set_tests_properties(smoke.doctor_json PROPERTIES ENVIRONMENT "${report_env}")

# Per family: a smoke run (tiny minimum time, one repetition) whose JSON is then checked, and the
# benchmark run proper (`ctest -L bench`, the quick profile unless GAPBENCH_PROFILE says full).
# A family's smoke run includes `peak/`, so its file stands alone; smoke.peak.* is `peak/` alone
# (the ISA presets' check of its capped rows). The bench runs measure `peak/` once,
# into peak.json, before every family (the fixture bench_peak: `ctest -R bench.conv` runs it
# too); each family's file names it (--peak, context peak.results_file) and probes two
# ceilings at its start and end, so a machine that changed speed during it still shows.
add_test(NAME bench.peak
         COMMAND gapbench --benchmark_filter=^peak/
                 --benchmark_out=${GAPBENCH_RESULTS_DIR}/peak.json)
set_tests_properties(bench.peak PROPERTIES LABELS bench RUN_SERIAL TRUE TIMEOUT 1800
                     FIXTURES_SETUP bench_peak FIXTURES_REQUIRED bench_run)
foreach(family IN LISTS GAPBENCH_FAMILIES)
  if(family STREQUAL "peak")
    set(filter "--benchmark_filter=^peak/")
  else()
    set(filter "--benchmark_filter=^(peak|${family})/")
  endif()
  set(smoke_json ${CMAKE_BINARY_DIR}/smoke/${family}.json)
  add_test(NAME smoke.${family}.run
           COMMAND gapbench ${filter} --benchmark_repetitions=1 --benchmark_min_time=0.01
                   --benchmark_out=${smoke_json})
  add_test(NAME smoke.${family}.check
           COMMAND ${Python3_EXECUTABLE} -m gapbench_report.check.command ${smoke_json} --family ${family})
  set_tests_properties(smoke.${family}.run PROPERTIES LABELS smoke FIXTURES_SETUP smoke_${family}
                       RUN_SERIAL TRUE)
  set_tests_properties(smoke.${family}.check PROPERTIES LABELS smoke
                       FIXTURES_REQUIRED smoke_${family} ENVIRONMENT "${report_env}")

  if(family STREQUAL "peak")
    continue()
  endif()
  # Two runs of gapbench pooled, a run that changed speed (its SGEMM probes moved past the
  # stability table's limit) replaced by a third (ci/gapbench_ci/steady_run.py).
  set(family_json ${GAPBENCH_RESULTS_DIR}/${family}.json)
  add_test(NAME bench.${family}
           COMMAND ${Python3_EXECUTABLE} -m gapbench_ci steady-run ${family_json} --
                   $<TARGET_FILE:gapbench> --benchmark_filter=^${family}/ --peak=peak.json
                   --benchmark_out=${family_json})
  set_tests_properties(bench.${family} PROPERTIES LABELS bench RUN_SERIAL TRUE TIMEOUT 3600
                       FIXTURES_REQUIRED "bench_run;bench_peak" ENVIRONMENT "${report_env}")
endforeach()

# `ctest -L bench` ends with the report of the run it just made (after every family, even one
# that failed: the report shows what there is).
add_test(NAME bench.report
         COMMAND sh -c "\"$1\" -m gapbench_report render \"$2\"/*.json --out \"$2/report\""
                 sh ${Python3_EXECUTABLE} ${GAPBENCH_RESULTS_DIR})
set_tests_properties(bench.report PROPERTIES LABELS bench FIXTURES_CLEANUP bench_run
                     ENVIRONMENT "${report_env}")
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/smoke ${GAPBENCH_RESULTS_DIR})
