"""The serving probe's Python side (internal/harness/vllm): reference.py on a real (tiny) causal LM, and
serve.py fed its prompt, against the stand-in vllm (testdata/fake_vllm). The Go side (internal/serving/measure)
judges; its tests run serve.py through every behaviour of the stand-in."""

import json
import os
import subprocess
import sys

import harness_real_inputs
from test_inputs import causal_lm  # noqa: F401 - the tiny LM with its own tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.dirname(HERE)
VLLM_DIR = os.path.join(HARNESS, "vllm")
FAKE_SITE = os.path.join(HARNESS, "testdata", "fake_vllm", "site")
TABLE = os.path.join(VLLM_DIR, "serving.json")


def test_reference_then_serve(tmp_path):
    model_dir, tk = causal_lm(tmp_path, "serve", train_steps=0)
    out = tmp_path / "reference.json"
    subprocess.run([sys.executable, os.path.join(VLLM_DIR, "reference.py"), model_dir, TABLE, HARNESS, str(out)],
                   check=True, timeout=300)
    ref = json.loads(out.read_text())
    table = json.load(open(TABLE))
    assert ref["prompt_token_ids"] == tk.encode(harness_real_inputs.PROMPT).ids, (
        "the generate stage's prompt, in the model's tokenizer"
    )
    assert 0 < len(ref["tokens"]) <= table["max_tokens"]

    with open(os.path.join(model_dir, "fake_vllm.json"), "w") as fh:
        json.dump({"behaviour": "ok", "tokens": ref["tokens"]}, fh)
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps(
            {
                "model": model_dir,
                "tensor_parallel_size": 1,
                "prompt_token_ids": ref["prompt_token_ids"],
                "table": TABLE,
                "harness": HARNESS,
            }
        )
    )
    res_path = tmp_path / "out.json"
    env = dict(os.environ, PYTHONPATH=FAKE_SITE)
    subprocess.run([sys.executable, os.path.join(VLLM_DIR, "serve.py"), str(args), str(res_path)], check=True, env=env,
                   timeout=120)
    res = json.loads(res_path.read_text())
    assert res["ok"] and res["failure"] is None, res
    assert res["tokens"] == ref["tokens"][: table["max_tokens"]]
    assert res["versions"]["vllm-torchtpu"] == "0.29.0" and res["load_s"] is not None and res["ttft_s"] is not None


def test_reference_reports_its_failure(tmp_path):
    out = tmp_path / "reference.json"
    p = subprocess.run(
        [sys.executable, os.path.join(VLLM_DIR, "reference.py"), str(tmp_path), TABLE, HARNESS, str(out)], timeout=300
    )
    assert p.returncode == 1
    assert json.loads(out.read_text())["error"]
