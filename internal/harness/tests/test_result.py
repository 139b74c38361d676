"""The Result dataclasses (harness_result.py) against the JSON contract: results written by the harness before the
dataclasses existed (testdata/results, made by the dict-building code of commit 774db3d on a tiny llama: a pass
through compile and generate, a forward failure, a skip, --env-only) read back and write the same dict; a run of
today's harness writes the same keys with the same nulls; and the Go decoder (internal/compat.Result, and the
--env-only extras of internal/probe) names every field the dataclasses write."""

import json
import os
import re
import subprocess
import sys

import pytest

import harness_result
from conftest import HARNESS, HARNESS_DIR, build_model_dir

RESULTS = os.path.join(HARNESS_DIR, "testdata", "results")
ROOT = os.path.dirname(os.path.dirname(HARNESS_DIR))


def _old(name: str) -> dict:
    with open(os.path.join(RESULTS, name), encoding="utf-8") as fh:
        return json.load(fh)


@pytest.mark.parametrize("name", ["pass.json", "fail.json", "skip.json"])
def test_a_result_of_the_old_code_round_trips(name):
    old = _old(name)
    res = harness_result.Result.from_dict(old)
    assert isinstance(res.metrics, harness_result.Metrics) and isinstance(res.runtime, harness_result.Runtime)
    assert all(isinstance(s, harness_result.StageRun) for s in res.stages)
    assert res.to_dict() == old
    assert json.loads(json.dumps(res.to_dict(), allow_nan=False)) == old


def test_the_env_only_result_of_the_old_code_round_trips():
    old = _old("env.json")
    assert harness_result.EnvResult.from_dict(old).to_dict() == old


def test_a_key_the_dataclasses_do_not_name_is_refused():
    old = _old("pass.json")
    with pytest.raises(KeyError, match="surprise"):
        harness_result.Result.from_dict(dict(old, surprise=1))
    with pytest.raises(KeyError, match="surprise"):
        harness_result.Result.from_dict(dict(old, metrics=dict(old["metrics"], surprise=1)))
    res = harness_result.Result.from_dict(old)
    with pytest.raises(AttributeError, match="surprise"):
        res.metrics.surprise = 1


def test_unset_is_left_out_and_none_is_null():
    m = harness_result.Metrics()
    d = m.to_dict()
    assert d["forward_ms"] is None and "collective_ms" not in d
    m.collective_ms = None  # measured and found nothing: null, but written
    assert m.to_dict()["collective_ms"] is None
    m.forward_ms = float("nan")
    m.finite()
    assert m.forward_ms is None


def _shape(val):
    """The keys, nulls and kinds of a JSON value (not its measurements)."""
    if isinstance(val, dict):
        return {k: _shape(v) for k, v in val.items()}
    if isinstance(val, list):
        return [_shape(v) for v in val[:1]]
    if val is None:
        return None
    return "number" if isinstance(val, (int, float)) and not isinstance(val, bool) else type(val).__name__


CASES = {  # the fixture: how it was made (testdata/results), as run_subproc's arguments
    "pass.json": {},
    "fail.json": {"env": {"HARNESS_TEST_INJECT": "forward:RuntimeError:boom"}, "extra": ["--no-compile"]},
    "skip.json": {"mode": "arch", "extra": ["--memory-budget-bytes", "1"]},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_todays_run_writes_what_the_old_code_wrote(tmp_path, run_subproc, name):
    """The same run as the fixture (a tiny llama: a pass through compile and generate, a forward failure, a skip):
    the same keys at every level, the same nulls for the metrics not measured."""
    d = build_model_dir(tmp_path, "llama", full=True)
    proc, res = run_subproc(d, model_id="test/llama", **CASES[name])
    assert proc.returncode == 0 and res is not None, proc.stderr[-2000:]
    old = _old(name)
    assert res["status"] == old["status"], res["message"]
    lists = ("stages", "ops_traced", "modes")  # compared by their keys: a stage's note, the ops counted
    assert [k for k in lists if k in res] == [k for k in lists if k in old]
    for key in (k for k in lists if k in old):
        if isinstance(old[key], list):
            assert [s["stage"] for s in res[key]] == [s["stage"] for s in old[key]]
            assert [sorted(s) for s in res[key]] == [sorted(s) for s in old[key]]
        else:
            assert sorted(res[key]) == sorted(old[key]), key
    assert _shape({k: v for k, v in res.items() if k not in lists}) == \
        _shape({k: v for k, v in old.items() if k not in lists})
    assert harness_result.Result.from_dict(res).to_dict() == res


def test_todays_env_only_writes_what_the_old_code_wrote(tmp_path):
    out = tmp_path / "env.json"
    proc = subprocess.run([sys.executable, "-I", "-u", "-B", HARNESS, "--env-only", "--result-file", str(out),
                           "--target", "cpu"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(out.read_text())
    assert _shape(res) == _shape(_old("env.json"))
    assert harness_result.EnvResult.from_dict(res).to_dict() == res


def _go_fields(path: str, struct: str) -> set[str]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        src = fh.read()
    m = re.search(r"^type " + struct + r" struct \{\n(.*?)^\}", src, re.S | re.M) if struct else None
    body = m.group(1) if m else src
    return set(re.findall(r'json:"([a-z_0-9]+)[,"]', body))


def _fields(cls) -> set[str]:
    import dataclasses

    return {f.name for f in dataclasses.fields(cls)}


# Fields of compat's structs that the scanner fills, never the harness: a new field on either side fails below
# until it is written by the harness (a dataclass field) or named here.
GO_ONLY = {
    "Result": {"scan_id", "worker", "worker_tested_at", "known_issue", "evidence", "tpu_ops"},
}


@pytest.mark.parametrize("cls, struct", [
    (harness_result.Result, "Result"), (harness_result.Runtime, "Runtime"), (harness_result.Metrics, "Metrics"),
    (harness_result.StageRun, "StageRun"), (harness_result.Continuation, "Continuation"),
])
def test_the_go_decoder_reads_every_field(cls, struct):
    go = _go_fields("internal/compat/compat.go", struct)
    scanners = GO_ONLY.get(struct, set())
    assert _fields(cls) == go - scanners
    assert scanners <= go


def test_the_env_only_fields_are_the_result_and_the_runners_extras():
    with open(os.path.join(ROOT, "internal/probe/envprobe.go"), encoding="utf-8") as fh:
        src = fh.read()
    extras = set(re.findall(r'json:"([a-z_0-9]+)"', src[src.index("var extra struct"):]))
    assert extras == {"google_torch_tpu", "note", "tpu_chips"}
    go = _go_fields("internal/compat/compat.go", "Result")
    # available_targets and device_memory_bytes are read by people and tests (docs/operating.md), not the runner
    assert _fields(harness_result.EnvResult) - go - extras == {"available_targets", "device_memory_bytes"}
    assert _fields(harness_result.EnvResult) & GO_ONLY["Result"] == set()
