"""The fake torch_tpu's torch.backends entry point (torch_tpu._loader:load, as in Google's). It stands
for what Google's torch_tpu 0.2.0 cannot show on a host without a TPU chip: a loader that raises and a
runtime that fails on a chip the PCI scan found. The harness asks it only where its own PCI scan finds
a chip (a test passes --host-root with a fake tree). What it does is chosen by the environment variable
TORCH_TPU_FAKE (its TORCH_TPU_ prefix is on the Go runner's allow-list):

``loader-raises``
    load() raises LOADER_MESSAGE, as a torch_tpu build whose extension does not match the
    installed torch would (torch_tpu/_versioned_so_loader.py binds its glue eagerly).
``first-op-fails``
    load() registers a "tpu" device the way torch_tpu does (privateuse1 renamed, a device module
    whose is_available() is the PCI scan's yes), but the runtime cannot start: the first op on the
    device raises FIRST_OP_MESSAGE (a TPU held by another process), manual_seed_all raises too
    (seeding a broken runtime), and current_device() aborts the process.
``first-op-aborts``
    as first-op-fails, but the first op writes libtpu's CHECK failure (ABORT_LINES: a log line, a
    fatal line naming the held TPU, the crash handler's stack trace) to stderr and aborts the
    process (SIGABRT), as libtpu does when its compilation context cannot be created.
``first-op-hangs``
    as first-op-fails, but the first op writes libtpu's metadata-server complaint (HANG_LINE) and
    never returns, as libtpu retrying the GCE metadata server on a host without one.
anything else
    load() registers nothing, as Google's loader on a host whose PCI scan counts no TPU.
"""

import os
import sys
import time

LOADER_MESSAGE = ("libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv (torch_tpu glue built for "
                  "another torch)")
FIRST_OP_MESSAGE = ("TPU initialization failed: The TPU is already in use by process with pid 4242. "
                    "Not attempting to load libtpu.so in this process.")
ABORT_LINES = [
    "I0000 00:00:1796140000.000000    4711 pjrt_api.cc:119] GetPjrtApi was found for TPU at libtpu.so",
    "E0000 00:00:1796140000.100000    4711 tpu_hooks.cc:233] PjRt backend unavailable: the fake first op",
    "F0000 00:00:1796140000.200000    4711 compilation.cc:81] Check failed: status.ok() Failed to create "
    "default compilation context: ABORTED: The TPU is already in use by process with pid 4242",
    "*** Check failure stack trace: ***",
    "    @     0x7f2a1c0b1234  (unknown)",
    "=== Source Location Trace: ===",
    "learning/45eac/tfrc/runtime/tpu_state.cc:512",
    "E0000 00:00:1796140000.300000    4711 process_state.cc:805] RAW: Raising signal 6 with default behavior",
]
HANG_LINE = ("E0000 00:00:1796140000.000000    4711 env_var_utils.cc:96] Failed to convert value for key "
             "'CHIPS_PER_HOST_BOUNDS' in 'tpu-env' to string: INTERNAL: Failed to fetch URL after 30 tries")

_KEEP = []  # torch.library registrations live as long as their Library object


def _runtime_failure(*args, **kwargs):
    raise RuntimeError(FIRST_OP_MESSAGE)


def _runtime_abort(*args, **kwargs):
    for line in ABORT_LINES:
        print(line, file=sys.stderr, flush=True)
    os.abort()


def _runtime_hang(*args, **kwargs):
    print(HANG_LINE, file=sys.stderr, flush=True)
    while True:
        time.sleep(60)


def _current_device():
    os.abort()  # a caller that asks for the device before proving the runtime started dies here


def _register_failing_device(first_op):
    import types

    import torch

    torch.utils.rename_privateuse1_backend("tpu")
    mod = types.ModuleType("torch_tpu_fake_device")
    mod.is_available = lambda: True
    mod.is_initialized = lambda: False
    mod.get_device_name = lambda device=None: "TPU v7"
    mod.current_device = _current_device
    mod._is_in_bad_fork = lambda: False
    mod.manual_seed_all = _runtime_failure
    mod._lazy_init = lambda: None
    torch._register_device_module("tpu", mod)
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", first_op, "PrivateUse1")
    _KEEP.append(lib)


def load():
    mode = os.environ.get("TORCH_TPU_FAKE", "")
    if mode == "loader-raises":
        raise ImportError(LOADER_MESSAGE)
    first_op = {"first-op-fails": _runtime_failure, "first-op-aborts": _runtime_abort,
                "first-op-hangs": _runtime_hang}.get(mode)
    if first_op is not None:
        _register_failing_device(first_op)
