"""safetensors_params reads only headers, in linear time, and refuses hostile ones.

A header is JSON from a stranger's repository: 80 000 huge dimensions once took 89 s of CPU
(the element count became a big integer multiplied once per dimension). The time bounds
below are CPU time of this process (not wall time, the machine is shared) and generous."""

from __future__ import annotations

import contextlib
import json
import signal
import struct
import time

import pytest

import harness


def write_st(path, header) -> str:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
    return str(path)


class TooSlow(Exception):
    pass


@contextlib.contextmanager
def cpu_budget(seconds: float):
    """Fails the test as soon as this process has used `seconds` of CPU inside the block."""

    def fire(signum, frame):
        raise TooSlow(f"more than {seconds} s of CPU")

    old = signal.signal(signal.SIGVTALRM, fire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)


def test_counts_real_headers(tmp_path):
    a = write_st(tmp_path / "a.safetensors", {
        "__metadata__": {"format": "pt"},
        "embed.weight": {"dtype": "BF16", "shape": [512, 64], "data_offsets": [0, 65536]},
        "norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [65536, 65792]},
        "scalar": {"dtype": "F32", "shape": [], "data_offsets": [65792, 65796]},
    })
    b = write_st(tmp_path / "b.safetensors", {
        "lm_head.weight": {"dtype": "BF16", "shape": [512, 64], "data_offsets": [0, 65536]},
        "conv.weight": {"dtype": "F16", "shape": [3, 4, 5, 6], "data_offsets": [65536, 68416]},
    })
    assert harness.safetensors_params([a]) == 512 * 64 + 64 + 1
    assert harness.safetensors_params([a, b]) == 2 * 512 * 64 + 64 + 1 + 3 * 4 * 5 * 6


@pytest.mark.parametrize("dims", [80_000, 1_000_000])
def test_many_huge_dimensions_in_linear_time(tmp_path, dims):
    f = write_st(tmp_path / "h.safetensors",
                 {"t": {"dtype": "F32", "shape": [2**62] * dims, "data_offsets": [0, 0]}})
    start = time.process_time()
    with cpu_budget(5.0):
        got = harness.safetensors_params([f])
    assert got is None, "a shape of %d dimensions is no checkpoint" % dims
    assert time.process_time() - start < 5.0


def test_tensor_cap_over_all_files(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "ST_MAX_TENSORS", 1000)
    one = {"t%d" % i: {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]} for i in range(600)}
    a = write_st(tmp_path / "a.safetensors", one)
    b = write_st(tmp_path / "b.safetensors", one)
    assert harness.safetensors_params([a]) == 1200
    assert harness.safetensors_params([a, b]) is None, "1200 tensors over two files pass the cap of 1000"


def test_a_large_header_within_the_caps_is_linear(tmp_path):
    # 50 000 tensors of ST_MAX_DIMS dimensions each: about the most work per byte an accepted
    # header asks of the count.
    n = 50_000
    shape = ",".join(["1"] * harness.ST_MAX_DIMS)
    body = ",".join('"t%d":{"dtype":"F32","shape":[%s],"data_offsets":[0,4]}' % (i, shape) for i in range(n))
    f = write_st(tmp_path / "wide.safetensors", ("{" + body + "}").encode())
    with cpu_budget(10.0):
        assert harness.safetensors_params([f]) == n


@pytest.mark.parametrize("header", [
    {"t": {"dtype": "F32", "shape": [2**60, 2**60], "data_offsets": [0, 0]}},   # product too large
    {"t": {"dtype": "F32", "shape": [1] * 17, "data_offsets": [0, 0]}},         # too many dimensions
    {"t": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 0]}},          # negative
    {"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 0]}},            # not an integer
    {"t": {"dtype": "F32", "shape": [True], "data_offsets": [0, 0]}},           # bool is no dimension
    {"t": {"dtype": "F32", "shape": "12", "data_offsets": [0, 0]}},             # not a list
    {"t": {"dtype": "F32", "shape": [10**400], "data_offsets": [0, 0]}},        # huge literal
    [1, 2, 3],                                                                   # not an object
])
def test_hostile_shapes_give_unknown(tmp_path, header):
    f = write_st(tmp_path / "bad.safetensors", header)
    assert harness.safetensors_params([f]) is None


def test_deep_nesting_and_oversized_headers_give_unknown(tmp_path):
    deep = write_st(tmp_path / "deep.safetensors", b"[" * 200_000 + b"]" * 200_000)
    assert harness.safetensors_params([deep]) is None
    big = tmp_path / "big.safetensors"
    with open(big, "wb") as fh:
        fh.write(struct.pack("<Q", harness.ST_MAX_HEADER_BYTES + 1))
    assert harness.safetensors_params([str(big)]) is None
