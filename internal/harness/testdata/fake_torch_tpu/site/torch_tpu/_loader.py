"""The fake torch_tpu's torch.backends entry point (torch_tpu._loader:load, as in Google's
build_files/entry_points.bzl). What it does is chosen by the environment variable TORCH_TPU_FAKE
(its TORCH_TPU_ prefix is on the Go runner's allow-list):

``loader-raises``
    load() raises LOADER_MESSAGE, as a torch_tpu build whose extension does not match the
    installed torch would (torch_tpu/_versioned_so_loader.py binds its glue eagerly).
``first-op-fails``
    load() registers a "tpu" device the way torch_tpu does (privateuse1 renamed, a device module
    whose is_available() is the PCI scan's yes), but the runtime cannot start: the first op on the
    device raises FIRST_OP_MESSAGE (a TPU held by another process), manual_seed_all raises too
    (seeding a broken runtime), and current_device() aborts the process.
anything else
    load() registers nothing, as Google's loader on a host whose PCI scan counts no TPU.
"""

import os

LOADER_MESSAGE = ("libtpu.so: undefined symbol: _ZN3c1019fake_abi_mismatchEv (torch_tpu glue built for "
                  "another torch)")
FIRST_OP_MESSAGE = ("TPU initialization failed: The TPU is already in use by process with pid 4242. "
                    "Not attempting to load libtpu.so in this process.")

_KEEP = []  # torch.library registrations live as long as their Library object


def _runtime_failure(*args, **kwargs):
    raise RuntimeError(FIRST_OP_MESSAGE)


def _current_device():
    os.abort()  # a caller that asks for the device before proving the runtime started dies here


def _register_failing_device():
    import types

    import torch

    torch.utils.rename_privateuse1_backend("tpu")
    mod = types.ModuleType("torch_tpu_fake_device")
    mod.is_available = lambda: True
    mod.is_initialized = lambda: False
    mod.device_count = lambda: 4
    mod.get_device_name = lambda device=None: "TPU v7"
    mod.current_device = _current_device
    mod._is_in_bad_fork = lambda: False
    mod.manual_seed_all = _runtime_failure
    mod._lazy_init = lambda: None
    torch._register_device_module("tpu", mod)
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("empty.memory_format", _runtime_failure, "PrivateUse1")
    _KEEP.append(lib)


def load():
    mode = os.environ.get("TORCH_TPU_FAKE", "")
    if mode == "loader-raises":
        raise ImportError(LOADER_MESSAGE)
    if mode == "first-op-fails":
        _register_failing_device()
