"""The harness's one test seam (harness_testing.py): chosen at start-up, absent from the real stages."""

import inspect

import harness
import harness_compare
import harness_compile
import harness_config
import harness_context
import harness_generate
import harness_modes
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


def test_the_probe_composes_its_stages():
    # Probe inherits nothing: it composes one object per stage, each built with the shared context
    assert harness.Probe.__mro__ == (harness.Probe, object)
    probe = harness.Probe(_args())
    stages = {"config_stage": harness_config.ConfigStage, "numerics_stage": harness_compare.NumericsStage,
              "modes_stage": harness_modes.Modes, "compile_stage": harness_compile.CompileStage,
              "generate_stage": harness_generate.GenerateStage}
    for attr, cls in stages.items():
        stage = getattr(probe, attr)
        assert type(stage) is cls and stage.ctx is probe.ctx, attr
    # one copy of the shared state: the probe's attribute is the context's, as each stage's is
    probe.dev_out = "x"
    assert probe.ctx.dev_out == probe.numerics_stage.dev_out == "x"
    assert probe.reference.ctx is probe.ctx


def test_the_seam_subclasses_the_stages(monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_INJECT", "numerics:perturb")
    probe = harness.new_probe(_args())
    for attr, cls, hook in (("numerics_stage", harness_compare.NumericsStage, "stage_numerics"),
                            ("modes_stage", harness_modes.Modes, "train_target_model"),
                            ("compile_stage", harness_compile.CompileStage, "compile_model")):
        stage = getattr(probe, attr)
        assert isinstance(stage, cls) and type(stage) is not cls, attr
        assert getattr(type(stage), hook) is not getattr(cls, hook), (attr, hook)
        assert stage.faults is probe.faults
    assert type(probe.config_stage) is harness_config.ConfigStage  # nothing injected there


def test_real_stages_carry_no_test_code():
    # the Probe and the stages it composes (harness_config, harness_compare, harness_compile, harness_generate);
    # harness_modes.Modes is left out: its docstrings name the hooks harness_testing overrides
    stages = [harness.Probe, harness.Probe.config_cls, harness.Probe.numerics_cls, harness.Probe.compile_cls,
              harness.Probe.generate_cls, harness_context.Stage]
    assert {c.__name__ for c in stages} == {"Probe", "ConfigStage", "NumericsStage", "CompileStage", "GenerateStage",
                                            "Stage"}
    for cls in stages:
        src = inspect.getsource(cls)
        for word in ("inject", "HARNESS_TEST", "perturb"):
            assert word not in src, (cls.__name__, word)
    # the variable is read in one place only: new_probe
    src = inspect.getsource(harness)
    code = src.split('"""', 2)[2]  # after the module docstring
    assert code.count("HARNESS_TEST_INJECT") == 2  # new_probe's docstring and its one read
    assert "os.environ.get(\"HARNESS_TEST_INJECT\"" in inspect.getsource(harness.new_probe)
