"""Tests of the results loader and the smoke check, on tiny JSON files in tests/data."""

import io
import json
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from gapbench_report.check import command as check
from gapbench_report.inputs.results import ResultsError, load_results, parse_name, row_math

DATA = Path(__file__).parent / "data"


class ParseName(unittest.TestCase):
    def test_full_name(self):
        n = parse_name("conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/manual_time")
        self.assertEqual((n.family, n.variant, n.device, n.timing), ("conv", "cudnn", "gpu",
                                                                     "manual_time"))
        self.assertEqual(n.axes, {"n": "32", "c": "64", "hw": "56", "k": "64", "r": "3"})
        self.assertIsNone(n.threads)

    def test_threads_and_string_axes(self):
        n = parse_name("peak/memcpy/cpu/mib:256/real_time/threads:2")
        self.assertEqual(n.threads, 2)
        self.assertEqual(parse_name("transfer/pinned/gpu/dir:h2d/mode:async/bytes:4096").axes,
                         {"dir": "h2d", "mode": "async", "bytes": "4096"})

    def test_benchmark_settings_are_not_axes(self):
        n = parse_name("overhead/startup/gpu/what:first_launch/iterations:3/manual_time")
        self.assertEqual((n.axes, n.timing), ({"what": "first_launch"}, "manual_time"))
        n = parse_name("overhead/startup/gpu/what:context/min_time:0.100/real_time/threads:1")
        self.assertEqual((n.axes, n.threads), ({"what": "context"}, 1))

    def test_row_math_is_the_axis_else_what_the_context_says_the_default_was(self):
        """The one place a row's arithmetic is decided: unmarked cuDNN convolutions are TF32
        from compute capability 8.0 (the H100's and H200's files) and where no GPU is named,
        float32 before 8.0; an old probe's framework rows follow their file's TF32 setting."""
        conv = "n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/manual_time"
        cases = [
            (f"conv/cudnn/gpu/{conv}", {"gpu.compute_capability": "9.0"}, "tf32"),
            (f"conv/cudnn/gpu/{conv}", {"gpu.compute_capability": "8.0"}, "tf32"),
            (f"conv/cudnn_e2e/gpu/{conv}", {"gpu.compute_capability": "8.6"}, "tf32"),
            (f"conv/cudnn/gpu/{conv}", {"gpu.compute_capability": "7.5"}, "fp32"),
            (f"conv/cudnn/gpu/{conv}", {}, "tf32"),
            ("conv/cudnn/gpu/n:32/math:fp32/manual_time", {"gpu.compute_capability": "9.0"},
             "fp32"),
            ("conv/cudnn/gpu/n:32/math:fp16/manual_time", {}, "fp16"),
            (f"conv/naive/gpu/{conv}", {"gpu.compute_capability": "9.0"}, "fp32"),
            ("lstm/cudnn/gpu/scope:seq/batch:64/manual_time", {"gpu.compute_capability": "9.0"},
             "fp32"),
            ("peak/sgemm/gpu/n:4096/manual_time", {"gpu.compute_capability": "9.0"}, "fp32"),
            ("conv/onednn/cpu/n:32/real_time", {}, "fp32"),
            ("framework/torch/gpu/op:conv/n:32/real_time", {"framework.tf32_conv": "on"},
             "tf32"),
            ("framework/torch/gpu/op:matmul/n:32/real_time", {"framework.tf32_conv": "on"},
             "fp32"),
            ("framework/torch/gpu/op:conv/n:32/real_time",  # today's probe: TF32 set per row
             {"framework.tf32_conv": "on by default; the probe's GPU cases: on for math:tf32, "
                                     "off for float32"}, "fp32"),
            ("framework/torch/cpu/op:conv/n:32/real_time", {"framework.tf32_conv": "on"},
             "fp32"),
        ]
        for name, context, math in cases:
            with self.subTest(name=name, context=context):
                self.assertEqual(row_math(parse_name(name), context), math)

    def test_every_benchmark_carries_its_math_read_in_its_files_context(self):
        name = "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/manual_time"
        for capability, math in (("9.0", "tf32"), ("7.5", "fp32")):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "conv.json"
                doc = json.loads((DATA / "good.json").read_text(encoding="utf-8"))
                doc["context"]["gpu.compute_capability"] = capability
                doc["benchmarks"] = [{"name": name, "run_name": name, "run_type": "iteration",
                                      "iterations": 1, "real_time": 90.2, "time_unit": "us"}]
                path.write_text(json.dumps(doc), encoding="utf-8")
                self.assertEqual(load_results(path).benchmarks()[name].math, math)

    def test_rejects_other_schemes(self):
        for bad in ("BM_Foo/32", "conv/cudnn/tpu/n:1", "conv/cudnn/gpu/n", "conv/cudnn/gpu/n:1/n:2",
                    "Conv/cudnn/gpu", "conv/cudnn/gpu/n:1/extra"):
            with self.subTest(bad=bad), self.assertRaises(ResultsError):
                parse_name(bad)


class LoadResults(unittest.TestCase):
    def test_schema_1_threaded_rows_have_their_summed_counters_corrected(self):
        """Schema 1 counted a threaded row's flops and traffic once per thread too many
        (Google Benchmark sums the threads' counters, then multiplies by all their
        iterations); read there, they are divided by the threads. bytes_per_second was right."""
        from tests.synthetic import in_memory, runs
        rows = (runs("peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:2", [1e-4] * 2,
                     flops=[4.0e11] * 2)
                + runs("peak/read/cpu/mib:256/real_time/threads:2", [1e-2] * 2,
                       bytes_per_second=[3e10] * 2, traffic_bytes_per_second=[6e10] * 2)
                + runs("peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:1", [1e-4] * 2,
                       flops=[1.0e11] * 2))
        for schema, factor in (("1", 0.5), ("2", 1.0)):
            got = in_memory(rows, **{"gapbench.schema": schema}).benchmarks()
            two = got["peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:2"]
            read = got["peak/read/cpu/mib:256/real_time/threads:2"]
            one = got["peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:1"]
            self.assertEqual(two.counters["flops"], (4.0e11 * factor,) * 2, schema)
            self.assertEqual(read.counters["traffic_bytes_per_second"], (6e10 * factor,) * 2)
            self.assertEqual(read.counters["bytes_per_second"], (3e10,) * 2, schema)
            self.assertEqual(one.counters["flops"], (1.0e11,) * 2, schema)

    def test_good_file(self):
        r = load_results(DATA / "good.json")
        self.assertEqual(len(r.entries), 4)
        self.assertTrue(r.entries[2].skipped)
        self.assertFalse(r.entries[2].failed)
        self.assertTrue(r.entries[1].is_aggregate)

    def test_bad_inputs_give_one_line(self):
        cases = {"missing.json": "no such file", "empty.json": "empty file",
                 "truncated.json": "not valid JSON", "not_gapbench.json": "not a gapbench results",
                 "bad_name.json": "does not follow"}
        for name, words in cases.items():
            with self.subTest(name=name):
                with self.assertRaises(ResultsError) as caught:
                    load_results(DATA / name)
                self.assertIn(words, str(caught.exception))
                self.assertNotIn("\n", str(caught.exception))


    def test_both_forms_of_a_skip_read_alike(self):
        """Google Benchmark 1.7 writes a skip as an error "skipped: <reason>"; 1.8 and later as
        "skipped": true with "skip_message" (gapbench uses SkipWithMessage there)."""
        data = json.loads((DATA / "render" / "gpu_skipped.json").read_text())
        as_17 = [b for b in data["benchmarks"] if b.get("error_occurred")]
        self.assertTrue(as_17)
        with tempfile.TemporaryDirectory() as tmp:
            old = Path(tmp) / "old.json"
            old.write_text(json.dumps(data))
            for b in as_17:
                reason = b.pop("error_message")[len("skipped: "):]
                del b["error_occurred"]
                b.update(skipped=True, skip_message=reason)
            new = Path(tmp) / "new.json"
            new.write_text(json.dumps(data))
            before, after = load_results(old).benchmarks(), load_results(new).benchmarks()
            self.assertEqual({k: v.skip_reason for k, v in before.items()},
                             {k: v.skip_reason for k, v in after.items()})
            self.assertTrue(any(v.skip_reason for v in after.values()))
            self.assertFalse(any(v.error for v in after.values()))
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                self.assertEqual(check.main([str(new), "--family", "transfer"]),
                                 check.main([str(old), "--family", "transfer"]))


class Check(unittest.TestCase):
    def test_good_file_passes(self):
        self.assertEqual(check.problems(load_results(DATA / "good.json"), "preprocess"), [])
        self.assertEqual(check.main([str(DATA / "good.json"), "--family", "preprocess"]), 0)

    def test_failure_is_reported(self):
        found = check.problems(load_results(DATA / "failed.json"), "preprocess")
        self.assertEqual(len(found), 1)
        self.assertIn("validation failed", found[0])
        self.assertEqual(check.main([str(DATA / "failed.json")]), 1)

    def test_wrong_family_and_ran_without_gpu(self):
        r = load_results(DATA / "good.json")
        self.assertTrue(any("expected 'transfer'" in p for p in check.problems(r, "transfer")))
        r.entries[2].raw.update(error_occurred=False, real_time=3.0, iterations=5)
        self.assertTrue(any("ran although" in p for p in check.problems(r, None)))

    def _bf16_cpu_skip(self, message: str, isa: str | None, math: str = "/math:bf16") -> list:
        """check's problems with a oneDNN CPU variant ended by `message`, on a CPU whose oneDNN
        ran `isa` (None: a file that does not say)."""
        data = json.loads((DATA / "good.json").read_text())
        name = f"conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1{math}/real_time"
        data["benchmarks"][0].update(name=name, run_name=name, error_occurred=True,
                                     error_message=message, iterations=0, real_time=0)
        if isa is not None:
            data["context"]["onednn.isa"] = isa
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "r.json"
            path.write_text(json.dumps(data))
            return check.problems(load_results(path), None)

    def test_a_cpu_without_bf16_instructions_may_skip_the_bf16_variant(self):
        lacks = ("skipped: this CPU lacks bf16 instructions (AVX-512 BF16 or AMX): oneDNN is "
                 "capped at avx2 (DNNL_MAX_CPU_ISA=AVX2), where it would refuse bf16")
        for isa in ("avx2", "sse41", "avx512_core"):
            with self.subTest(isa=isa):
                self.assertEqual(self._bf16_cpu_skip(lacks, isa), [])
        # The file's own context must agree: oneDNN with bf16 instructions, or no word of it.
        for isa in ("avx512_core_bf16", "avx512_core_amx", None):
            with self.subTest(isa=isa):
                found = self._bf16_cpu_skip(lacks, isa)
                self.assertEqual(len(found), 1, found)
                self.assertIn("a CPU variant was skipped", found[0])
        # Only the arithmetic that needs the instructions: a float32 variant never skips so.
        self.assertEqual(len(self._bf16_cpu_skip(lacks, "avx2", math="")), 1)

    def _flops_skip(self, message: str, variant: str = "flops") -> list:
        """check's problems with a FLOP-peak row (or another peak row) skipped with `message`."""
        data = json.loads((DATA / "good.json").read_text())
        name = f"peak/{variant}/cpu/isa:avx512/math:fp32/real_time/threads:1"
        data["benchmarks"][0].update(name=name, run_name=name, error_occurred=True,
                                     error_message=message, iterations=0, real_time=0)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "r.json"
            path.write_text(json.dumps(data))
            return check.problems(load_results(path), None)

    def test_a_flops_row_may_skip_an_instruction_set_the_cpu_lacks_or_the_cap_excludes(self):
        self.assertEqual(self._flops_skip("skipped: this CPU lacks AVX-512"), [])
        self.assertEqual(self._flops_skip(
            "skipped: this CPU lacks AVX-512 (GAPBENCH_MAX_CPU_ISA=avx2 caps it at avx2)"), [])
        # Any other reason, or another peak row skipping so, is still a problem.
        for found in (self._flops_skip("skipped: not measured here"),
                      self._flops_skip("skipped: this CPU lacks AVX-512", variant="triad")):
            self.assertEqual(len(found), 1, found)
            self.assertIn("a CPU variant was skipped", found[0])

    def test_a_cpu_variant_that_fails_or_skips_for_another_reason_is_still_a_problem(self):
        failed = self._bf16_cpu_skip("could not create a primitive descriptor iterator", "avx2")
        self.assertEqual(len(failed), 1, failed)
        self.assertIn("failed: could not create a primitive descriptor iterator", failed[0])
        other = self._bf16_cpu_skip("skipped: bf16 needs AVX-512 BF16 or AMX", "avx2")
        self.assertEqual(len(other), 1, other)
        self.assertIn("a CPU variant was skipped", other[0])

    def test_unusable_input_exits_2(self):
        self.assertEqual(check.main([str(DATA / "truncated.json")]), 2)

    def _good_with(self, **fields) -> tuple[int, str, str]:
        """check's exit status, stdout and stderr on good.json with its first entry changed."""
        data = json.loads((DATA / "good.json").read_text())
        data["benchmarks"][0].update(fields)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "r.json"
            path.write_text(json.dumps(data))
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                status = check.main([str(path)])
        return status, out.getvalue(), err.getvalue().replace(str(path), "FILE")

    def test_a_counter_that_is_not_a_number_is_unusable_input(self):
        status, out, err = self._good_with(bytes_per_second="lots")
        self.assertEqual(status, 2)
        self.assertEqual(out, "")
        self.assertEqual(err, "gapbench check: FILE: preprocess/vectorized/cpu/op:sumsq/"
                              "rows:1000/cols:100/real_time: bytes_per_second is 'lots', not a "
                              "finite number\n")

    def test_a_counter_of_zero_is_still_a_problem_not_bad_input(self):
        status, out, _ = self._good_with(items_per_second=0)
        self.assertEqual(status, 1)
        self.assertIn("problem: preprocess/vectorized/cpu/op:sumsq/rows:1000/cols:100/"
                      "real_time: items_per_second is 0", out)

    def test_a_name_other_than_its_run_name_is_unusable_input(self):
        status, _, err = self._good_with(name="BM_SomethingElse/7")
        self.assertEqual(status, 2)
        self.assertEqual(len(err.splitlines()), 1)
        self.assertIn("FILE: benchmark #0: name 'BM_SomethingElse/7' does not match its run_name",
                      err)


if __name__ == "__main__":
    unittest.main()
