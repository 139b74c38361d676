"""The fit formula's table (fit.json) is shared with the scanner's plan (internal/scan/plan.go).

Go's TestNeedMatchesTheFitTable checks the same worked examples against the Go formula, so the
two sides cannot drift apart.
"""

import harness_host


def test_fit_need_reproduces_the_worked_examples():
    examples = harness_host.FIT["examples"]
    assert {e["target"] for e in examples} == {"cpu", "tpu", "cuda"}
    for e in examples:
        dtype = harness_host.FIT["targets"][e["target"]]["dtype"]
        assert harness_host.fit_need(e["params"], harness_host.FIT["dtype_bytes"][dtype], e["target"]) == e["need"], e


def test_the_table_names_the_harness_default_dtypes():
    # --dtype auto runs bfloat16 everywhere (on cpu against the float32 reference, so that a cpu verdict compares
    # two different runs, as on an accelerator); the plan predicts the same.
    assert {t: v["dtype"] for t, v in harness_host.FIT["targets"].items()} == {
        "cpu": "bfloat16", "tpu": "bfloat16", "cuda": "bfloat16"}
