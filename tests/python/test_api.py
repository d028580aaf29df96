#!/usr/bin/python3
"""The Python package (docs/python.md) against the program: the same call
gives the same --json fields and values, and the same error messages.

    test_api.py --cli build/swapadvisor --python build/python --data tests/data
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

ARGS = None


def cli(*argv, ok=True):
    r = subprocess.run([ARGS.cli, *argv], capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise AssertionError(f"swapadvisor {' '.join(argv)}: {r.stderr}")
    return r


def cli_json(*argv):
    return json.loads(cli(*argv, "--json").stdout)


def untimed(fields):
    """The fields but the wall times (search_seconds, seeds_seconds,
    longest_evaluation_s, planning_seconds), which differ run to run."""
    if isinstance(fields, dict):
        return {k: untimed(v) for k, v in fields.items()
                if not k.endswith(("_seconds", "_s"))}
    if isinstance(fields, list):
        return [untimed(v) for v in fields]
    return fields


class Api(unittest.TestCase):
    graph = None

    @classmethod
    def setUpClass(cls):
        cls.graph = os.path.join(ARGS.data, "graphs", "resnet50-b64.json.gz")

    def test_stats_equals_the_program(self):
        got = swapadvisor.stats(self.graph)
        self.assertEqual(got, cli_json("stats", self.graph))

    def test_stats_of_a_zoo_model(self):
        got = swapadvisor.stats(model="mlp-3", batch=8, device="a100-40gb")
        want = cli_json("stats", "--model", "mlp-3", "--batch", "8", "--device", "a100-40gb")
        self.assertEqual(got, want)

    def test_plan_equals_the_program(self):
        opts = dict(evaluations=20, seed=1, threads=1)
        got = swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=0.5, **opts)
        want = cli_json("plan", "--model", "mlp-3", "--batch", "8", "--memory-fraction", "0.5",
                        "--evaluations", "20", "--seed", "1", "--threads", "1", "--quiet")
        self.assertEqual(list(got), list(want))
        self.assertEqual(got["iteration_us"], want["iteration_us"])
        # Every field but the wall times of the search.
        self.assertEqual(untimed(got), untimed(want))

    def test_plan_is_verified_and_saved(self):
        r = swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=0.5, evaluations=20,
                             threads=1)
        v = swapadvisor.verify(model="mlp-3", batch=8, plan=r)
        self.assertTrue(v["valid"])
        self.assertEqual(v["memory_budget_bytes"], r["memory_budget_bytes"])
        with tempfile.TemporaryDirectory() as d:
            for name in ("plan.json", "plan.json.gz"):
                path = r.save(os.path.join(d, name))
                self.assertEqual(swapadvisor.verify(model="mlp-3", batch=8, plan=path), v)
                want = cli_json("verify", "--model", "mlp-3", "--batch", "8", path)
                self.assertEqual(v, want)

    def test_a_saved_plan_is_the_programs(self):
        r = swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=0.5, evaluations=20,
                             threads=1)
        with tempfile.TemporaryDirectory() as d:
            mine, theirs = os.path.join(d, "mine.json"), os.path.join(d, "theirs.json")
            r.save(mine)
            cli("plan", "--model", "mlp-3", "--batch", "8", "--memory-fraction", "0.5",
                "--evaluations", "20", "--threads", "1", "--quiet", "-o", theirs)
            with open(mine) as a, open(theirs) as b:
                self.assertEqual(a.read(), b.read())
            with self.assertRaisesRegex(swapadvisor.Error, "is a directory"):
                r.save(d)

    def test_file_errors_have_the_programs_message(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("not json")
            for path in (bad, os.path.join(d, "missing.json"), d):
                with self.assertRaises(swapadvisor.Error) as e:
                    swapadvisor.stats(path)
                r = cli("stats", path, ok=False)
                self.assertEqual(r.stderr.strip(), f"swapadvisor: error: {e.exception}")
                with self.assertRaises(swapadvisor.Error) as e:
                    swapadvisor.verify(model="mlp-3", batch=8, plan=path)
                r = cli("verify", "--model", "mlp-3", "--batch", "8", path, ok=False)
                self.assertEqual(r.stderr.strip(), f"swapadvisor: error: {e.exception}")

    def test_warnings_are_the_programs(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.json")
            cli("zoo", "--model", "mlp-3", "--batch", "8", "-o", path)
            with open(path) as f:
                g = json.load(f)
            for op in g["ops"][:3]:  # no cost: timed at the launch overhead, with a warning
                for key in ("time_us", "flops", "bytes_accessed"):
                    op.pop(key, None)
            with open(path, "w") as f:
                json.dump(g, f)
            want = cli("stats", path).stderr.strip().removeprefix("swapadvisor: warning: ")
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                swapadvisor.stats(path)
                swapadvisor.plan(path, evaluations=5, threads=1)
            self.assertEqual([str(w.message) for w in got], [want, want])
            self.assertTrue(all(w.filename == __file__ for w in got))

    def test_data_parallel_plan_equals_the_program(self):
        opts = ["--memory-fraction", "0.5", "--evaluations", "10", "--threads", "1"]
        got = swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=0.5, evaluations=10,
                               threads=1, data_parallel=2, shard_optimizer=True)
        want = cli_json("plan", "--model", "mlp-3", "--batch", "8", *opts, "--data-parallel",
                        "2", "--shard-optimizer", "--quiet")
        self.assertEqual(untimed(got), untimed(want))
        self.assertEqual(swapadvisor.verify(model="mlp-3", batch=8, plan=got)["ranks"], 2)

    def test_a_plan_of_another_graph_is_refused(self):
        r = swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=0.5, evaluations=5,
                             threads=1)
        with self.assertRaises(swapadvisor.Error):
            swapadvisor.verify(model="mlp-3", batch=16, plan=r)

    def test_a_bad_budget_has_the_programs_message(self):
        for budget, flag in (("1KiB", "--memory"), ("64GiB", "--memory")):
            with self.assertRaises(swapadvisor.Error) as e:
                swapadvisor.plan(model="mlp-3", batch=8, budget=budget, evaluations=5)
            self.assertIsInstance(e.exception, ValueError)
            r = cli("plan", "--model", "mlp-3", "--batch", "8", flag, budget, "--evaluations",
                    "5", ok=False)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr.strip(), f"swapadvisor: error: {e.exception}")
        with self.assertRaises(swapadvisor.Error) as e:
            swapadvisor.plan(model="mlp-3", batch=8, memory_fraction=2.0)
        r = cli("plan", "--model", "mlp-3", "--batch", "8", "--memory-fraction", "2", ok=False)
        self.assertEqual(r.stderr.strip(), f"swapadvisor: error: {e.exception}")

    def test_bad_arguments_name_the_keyword(self):
        for kwargs, word in ((dict(threads=-1), "threads"), (dict(allocator="pool"), "allocator"),
                             (dict(time_budget=float("nan")), "time_budget"),
                             (dict(budget="1GiB", memory_fraction=0.5), "budget"),
                             (dict(device=5), "device"), (dict(method=None), "method"),
                             (dict(batch=8.0), "batch")):
            with self.assertRaisesRegex(swapadvisor.Error, word):
                swapadvisor.plan(**{"model": "mlp-3", "batch": 8, **kwargs})
        with self.assertRaisesRegex(swapadvisor.Error, "graph"):
            swapadvisor.stats(b"graph.json")
        with self.assertRaisesRegex(swapadvisor.Error, "no graph"):
            swapadvisor.stats()

    def test_compare_names_the_programs_methods(self):
        opts = ["--memory-fraction", "0.5", "--evaluations", "10", "--threads", "1"]
        got = swapadvisor.compare(model="mlp-3", batch=8, memory_fraction=0.5, evaluations=10,
                                  threads=1)
        want = cli_json("compare", "--model", "mlp-3", "--batch", "8", *opts, "--quiet")
        self.assertEqual(untimed(got), untimed(want))
        self.assertEqual([m["name"] for m in got["methods"]], swapadvisor.methods())

    def test_sweep_has_the_programs_fields(self):
        got = swapadvisor.sweep(model="mlp-3", batch=8, points=3, evaluations=5, threads=1)
        want = cli_json("sweep", "--model", "mlp-3", "--batch", "8", "--points", "3",
                        "--evaluations", "5", "--threads", "1", "--quiet")
        self.assertEqual(untimed(got), untimed(want))


def main():
    global ARGS, swapadvisor
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True)
    p.add_argument("--python", required=True, help="the folder that holds the package")
    p.add_argument("--data", required=True)
    ARGS, rest = p.parse_known_args()
    ARGS.python = os.path.abspath(ARGS.python)
    sys.path.insert(0, ARGS.python)
    import swapadvisor as module
    swapadvisor = module
    assert os.path.dirname(swapadvisor.__file__) == os.path.join(ARGS.python, "swapadvisor")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
