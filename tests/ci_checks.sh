#!/usr/bin/env bash
# Checks of the CI files, run by ctest (cmake/gapbench_checks.cmake) from the source root:
#   ci_checks.sh actionlint PYTHON_BIN_DIR   the workflows (actionlint from ci/setup's .venv)
#   ci_checks.sh shellcheck                  the bash scripts under ci/ and .ci/
#   ci_checks.sh inject-hook GAPBENCH ON|OFF the slowdown hook is in a GAPBENCH_TEST_INJECT
#                                            build and absent from every other
#   ci_checks.sh layering [ROOT]             every include line points down the layers:
#                                            bench → fixtures → kernels → kernels/base
#   ci_checks.sh probe-tensorflow PYTHON OUT [GAPBENCH]
#                                            the framework probe's real quick run with .venv-tf's
#                                            TensorFlow into OUT, checked by the report (PYTHON)
# A tool that is genuinely not installed is a skip (exit 77) that says so; ci/setup installs both.
# Under CI=true a missing .venv-tf fails instead: CI must never pass the probe by skipping it.
set -euo pipefail

skip() { echo "skipped: $1"; exit 77; }

case "${1:-}" in
  actionlint)
    tool="${2:-}/actionlint"
    [[ -x "$tool" ]] || tool="$(command -v actionlint || true)"
    [[ -n "$tool" ]] || skip "actionlint is not installed (bash ci/setup puts it into .venv/bin)"
    command -v shellcheck >/dev/null || echo "note: no shellcheck on PATH: run: blocks unchecked"
    "$tool" -version | head -n 1
    # Files and config named explicitly: a source tarball has no .git for actionlint to find them.
    exec "$tool" -color=false -config-file .github/actionlint.yaml .github/workflows/*.yml
    ;;
  shellcheck)
    command -v shellcheck >/dev/null || skip "shellcheck is not installed (bash ci/setup installs it)"
    exec shellcheck ci/setup ci/report-python ci/baseline ci/nightly ci/gate-proof \
      ci/colab-baseline ci/gpu-check ci/gpu-kit ci/gpu-quick-estimate .ci/run tests/ci_checks.sh
    ;;
  inject-hook)
    binary="$2" built_with="$3"
    if grep -q GAPBENCH_INJECT_FRACTION "$binary"; then found=ON; else found=OFF; fi
    if [[ "$found" != "$built_with" ]]; then
      echo "$binary: GAPBENCH_TEST_INJECT is $built_with but the hook is $([[ $found == ON ]] && echo present || echo absent)" >&2
      exit 1
    fi
    echo "$binary: the slowdown hook is $([[ $found == ON ]] && echo "compiled in (a test build)" || echo "compiled out")"
    ;;
  layering)
    root="${2:-.}" bad=0
    shopt -s nullglob
    # check DIR ALLOWED: each project include in DIR's own files names a folder in ALLOWED.
    check() {
      local file line
      for file in "$root/$1"/*.h "$root/$1"/*.cuh "$root/$1"/*.cpp "$root/$1"/*.cu; do
        while IFS= read -r line; do
          echo "wrong-way include: ${file#"$root"/}: $line" >&2
          bad=1
        done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$file" |
                 grep -vE "#[[:space:]]*include[[:space:]]+\"($2)/" || true)
      done
    }
    check kernels/base 'kernels/base'
    check kernels 'kernels'
    check fixtures 'kernels|fixtures'
    check bench 'kernels|fixtures|bench'
    [[ $bad == 0 ]] && echo "includes point down the layers: bench → fixtures → kernels → kernels/base"
    exit "$bad"
    ;;
  probe-tensorflow)
    report_python="$2" out="$3" gapbench="${4:-}"
    tf_python=.venv-tf/bin/python
    if [[ ! -x "$tf_python" ]]; then
      why=".venv-tf is missing (bash ci/setup --tensorflow makes it)"
      [[ "${CI:-}" != true ]] || { echo "CI=true: $why" >&2; exit 1; }
      skip "$why"
    fi
    rm -rf "$out"
    start=$SECONDS
    PYTHONPATH=probe "$tf_python" -m gapbench_probe --framework tensorflow --profile quick \
      --out "$out" ${gapbench:+--gapbench "$gapbench"}
    echo "the quick probe took $((SECONDS - start)) s"
    # A TensorFlow that did not import would skip every CPU benchmark: check calls that a problem.
    PYTHONPATH=report exec "$report_python" -m gapbench_report.check \
      "$out/framework-tensorflow.json" --family framework
    ;;
  *)
    echo "usage: $0 actionlint DIR | shellcheck | inject-hook GAPBENCH ON|OFF | layering [ROOT]" \
         "| probe-tensorflow PYTHON OUT [GAPBENCH]" >&2
    exit 2
    ;;
esac
