"""Failure classification and signature normalisation (pure Python, no models)."""

import json
import re

import harness_failures


def _raise_and_catch(exc):
    try:
        raise exc
    except BaseException as e:  # noqa: BLE001
        return e


def test_unsupported_op_could_not_run():
    e = _raise_and_catch(NotImplementedError(
        "Could not run 'aten::foo' with arguments from the 'TPU' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
        "custom build). 'aten::foo' is only available for these backends: [CPU, Meta]."))
    c = harness_failures.classify(e, "forward")
    assert c["status"] == "fail"
    assert c["failure_class"] == "unsupported_op"
    assert c["op"] == "aten::foo"
    assert c["signature"] == "unsupported_op:aten::foo"


def test_unsupported_op_not_currently_implemented():
    e = _raise_and_catch(NotImplementedError(
        "The operator 'aten::_fft_r2c' is not currently implemented for the TPU device. If you want this op to "
        "be considered for addition please comment on https://github.com/pytorch/pytorch/issues/77764."))
    c = harness_failures.classify(e, "forward")
    assert (c["failure_class"], c["op"]) == ("unsupported_op", "aten::_fft_r2c")


def test_torch_tpu_backend_fallback_names_the_op():
    """torch_tpu 0.2.0's backend fallback (the kernel table's "fallback" kind): the signature names the op, so that
    the model page can say whether the prediction (result.tpu_ops) had it."""
    for op in ("aten::median", "aten::_amp_foreach_non_finite_check_and_unscale_", "aten::median.dim"):
        e = _raise_and_catch(RuntimeError(f"Operator '{op}' is not implemented for TPU. Please file a feature request"))
        c = harness_failures.classify(e, "forward")
        assert (c["status"], c["failure_class"], c["op"], c["signature"]) == \
            ("fail", "unsupported_op", op, f"unsupported_op:{op}")


def test_same_missing_op_in_two_models_shares_a_signature():
    a = _raise_and_catch(RuntimeError(
        "Could not run 'aten::_upsample_bicubic2d_aa' with arguments from the 'PrivateUse1' backend "
        "(while running LlamaForCausalLM at 0x7f00deadbeef with input [1, 128, 4096])"))
    b = harness_failures.classify(_raise_and_catch(NotImplementedError(
        "The operator 'aten::_upsample_bicubic2d_aa' is not currently implemented for the tpu device. "
        "Seen in /tmp/model-b/modeling_vit.py:77 for 'google/vit-base'")), "forward")
    assert (
        harness_failures.classify(a, "forward")["signature"]
        == b["signature"]
        == "unsupported_op:aten::_upsample_bicubic2d_aa"
    )


def test_op_inside_a_wrapped_exception_is_found():
    try:
        try:
            raise NotImplementedError("Could not run 'aten::bar.out' with arguments from the 'TPU' backend.")
        except NotImplementedError as inner:
            raise RuntimeError("generate failed") from inner
    except RuntimeError as outer:
        c = harness_failures.classify(outer, "generate")
    assert c["op"] == "aten::bar.out"
    assert c["failure_class"] == "unsupported_op"


def test_compile_stage_is_compile_error_and_keeps_the_op():
    c = harness_failures.classify(_raise_and_catch(RuntimeError(
        "backend='tpu' raised: NotImplementedError: Could not run 'aten::baz' with arguments from the 'TPU' "
        "backend")), "compile")
    assert (c["failure_class"], c["op"], c["signature"]) == ("compile_error", "aten::baz", "compile_error:aten::baz")
    c = harness_failures.classify(
        _raise_and_catch(RuntimeError("lowering failed for node 17 in graph at 0xabc123")), "compile"
    )
    assert c["failure_class"] == "compile_error"
    assert c["signature"] == "compile_error:RuntimeError: lowering failed for node <n> in graph at <addr>"


def test_oom_variants():
    for exc in (MemoryError(), RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 3.2G."),
                RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"),
                RuntimeError("[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory: "
                             "you tried to allocate 123 bytes.")):
        c = harness_failures.classify(_raise_and_catch(exc), "load")
        assert (c["status"], c["failure_class"], c["signature"]) == ("oom", "oom", "oom:load"), exc


def _oom_table():
    with open(harness_failures.OOM_TABLE) as fh:
        return json.load(fh)


def test_oom_table_examples():
    """The shared out-of-memory table's own examples (oom_markers.json), which the Go runner is held to as
    well (internal/harness/oom_test.go): both languages call the same texts OOM."""
    table = _oom_table()
    assert table["examples"]["oom"] and table["examples"]["not_oom"]
    for text in table["examples"]["oom"]:
        c = harness_failures.classify(_raise_and_catch(RuntimeError(text)), "forward")
        assert (c["status"], c["failure_class"], c["signature"]) == ("oom", "oom", "oom:forward"), text
    for text in table["examples"]["not_oom"]:
        assert harness_failures.oom_marker(text) is None, text
        assert harness_failures.classify(_raise_and_catch(RuntimeError(text)), "forward")["status"] != "oom", text
    for m in table["markers"]:
        assert any(re.search(m["pattern"], text) for text in table["examples"]["oom"]), \
            f"marker {m['pattern']!r} matches none of the oom examples: add one"


def test_oom_markers_come_from_the_table():
    patterns = [m["pattern"] for m in _oom_table()["markers"]]
    assert [p.pattern for p in harness_failures._OOM_PATTERNS] == patterns
    # a generic "Failed to allocate" is not OOM
    assert harness_failures.oom_marker("RuntimeError: failed to allocate 4096 bytes") is None
    assert harness_failures.oom_marker("x\nRuntimeError: the TPU ran out of memory while awaiting y") == "out of memory"


def test_dtype():
    c = harness_failures.classify(
        _raise_and_catch(RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")), "forward"
    )
    assert c["failure_class"] == "unsupported_dtype"
    assert c["signature"] == "unsupported_dtype:addmm_impl_cpu_:Half"
    c = harness_failures.classify(_raise_and_catch(TypeError("Unsupported dtype Float8_e4m3fn for this op")), "forward")
    assert c["failure_class"] == "unsupported_dtype"


def test_import_error_is_fail_in_model_stages_and_error_in_env():
    e = _raise_and_catch(ImportError("This modeling file requires the following packages: einops"))
    assert harness_failures.classify(e, "load")["status"] == "fail"
    assert harness_failures.classify(e, "load")["failure_class"] == "import_error"
    assert harness_failures.classify(e, "env")["status"] == "error"


def test_stage_defaults():
    e = _raise_and_catch(ValueError("something odd at step 3"))
    assert harness_failures.classify(e, "config")["failure_class"] == "config_error"
    assert harness_failures.classify(e, "load")["failure_class"] == "load_error"
    assert harness_failures.classify(e, "forward")["failure_class"] == "other"
    assert harness_failures.classify(harness_failures.DeviceUnavailable("no TPU", "tpu"), "env")["status"] == "error"


def test_normalisation_removes_volatile_parts():
    msg = ("RuntimeError: shape '[1, 128, 64]' is invalid for input of size 8192 at 0x7f3a2b1c0d "
           "in /home/user/.cache/huggingface/hub/models--org--name/snapshots/0123456789abcdef0123456789abcdef01234567/"
           "modeling.py for model 'meta-llama/Llama-3.1-8B' (tensor torch.Size([2, 3])) rev 4f3e2d1c0b9a")
    n = harness_failures.normalize_message(msg)
    for bad in ("0x", "/home", "8192", "128", "Llama-3.1", "meta-llama", "torch.Size", "4f3e2d1c0b9a"):
        assert bad not in n, (bad, n)
    assert n.startswith("RuntimeError: shape")
    assert (
        harness_failures.normalize_message(
            msg.replace("8192", "16384").replace("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-0.6B")
        )
        == n
    )


def test_normalisation_groups_model_classes_and_keeps_ops_and_dtypes():
    a = harness_failures.normalize_message(
        "ValueError: LlamaForCausalLM does not support 'aten::foo' in 'BFloat16' mode"
    )
    b = harness_failures.normalize_message(
        "ValueError: MistralForCausalLM does not support 'aten::foo' in 'BFloat16' mode"
    )
    assert a == b
    assert "'aten::foo'" in a and "'BFloat16'" in a


def test_message_and_log_tail_are_bounded():
    e = _raise_and_catch(RuntimeError("x" * 100000))
    c = harness_failures.classify(e, "forward")
    assert len(c["message"].encode()) <= harness_failures.MESSAGE_LIMIT
    assert len(c["log_tail"].encode()) <= harness_failures.LOG_TAIL_LIMIT
    assert "Traceback" in harness_failures.classify(_raise_and_catch(RuntimeError("short")), "forward")["log_tail"]
