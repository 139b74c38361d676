"""The harness's one test seam (harness_testing.py): chosen at start-up, absent from the real stages."""

import inspect

import harness
import harness_testing
from conftest import REVISION


def _args():
    return harness.parse_args(["--model-dir", "/nonexistent", "--revision", REVISION, "--mode", "arch",
                              "--result-file", "/dev/null"])


def test_without_the_variable_the_probe_is_the_real_one(monkeypatch):
    monkeypatch.delenv("HARNESS_TEST_INJECT", raising=False)
    assert type(harness.new_probe(_args())) is harness.Probe


def test_with_the_variable_the_probe_injects(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "load:MemoryError:boom; numerics:perturb")
    probe = harness.new_probe(_args())
    assert isinstance(probe, harness.Probe) and type(probe) is not harness.Probe
    assert probe.faults == harness_testing.Faults(raises={"load": (MemoryError, "boom")}, perturb=True)


def test_parse():
    f = harness_testing.parse("forward:NotImplementedError:Could not run 'aten::foo': x;compile:recompile;"
                              "config:Bogus;tpu:simulate-recompiling;inputs:beyond-vocab;;")
    assert f.raises == {"forward": (NotImplementedError, "Could not run 'aten::foo': x"),
                        "config": (RuntimeError, "injected failure")}
    assert (f.perturb, f.recompile, f.tpu, f.beyond_vocab) == (False, True, "simulate-recompiling", True)
    assert harness_testing.parse("") == harness_testing.Faults()


def test_real_stages_carry_no_test_code():
    # the Probe and the stage families mixed into it (harness_config, harness_compare, harness_compile,
    # harness_generate); harness_modes.Modes is left out: its docstrings name the hooks harness_testing overrides
    stages = [c for c in harness.Probe.__mro__ if c is not object and c.__module__ != "harness_modes"]
    assert {c.__name__ for c in stages} == {"Probe", "ConfigStage", "NumericsStage", "CompileStage", "GenerateStage"}
    for cls in stages:
        src = inspect.getsource(cls)
        for word in ("inject", "HARNESS_TEST", "perturb"):
            assert word not in src, (cls.__name__, word)
    # the variable is read in one place only: new_probe
    src = inspect.getsource(harness)
    code = src.split('"""', 2)[2]  # after the module docstring
    assert code.count("HARNESS_TEST_INJECT") == 2  # new_probe's docstring and its one read
    assert "os.environ.get(\"HARNESS_TEST_INJECT\"" in inspect.getsource(harness.new_probe)
