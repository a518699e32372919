"""Tests of the results loader and the smoke check, on tiny JSON files in tests/data."""

import unittest
from pathlib import Path

from gapbench_report import check
from gapbench_report.results import ResultsError, load_results, parse_name

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

    def test_rejects_other_schemes(self):
        for bad in ("BM_Foo/32", "conv/cudnn/tpu/n:1", "conv/cudnn/gpu/n", "conv/cudnn/gpu/n:1/n:2",
                    "Conv/cudnn/gpu", "conv/cudnn/gpu/n:1/extra"):
            with self.subTest(bad=bad), self.assertRaises(ResultsError):
                parse_name(bad)


class LoadResults(unittest.TestCase):
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

    def test_unusable_input_exits_2(self):
        self.assertEqual(check.main([str(DATA / "truncated.json")]), 2)


if __name__ == "__main__":
    unittest.main()
