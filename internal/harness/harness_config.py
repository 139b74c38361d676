"""The config stage of a probe (harness.py): config.json to a task, a family, a model class and the config
the load builds from, in the mode the scanner's plan gave.

* config.json must be a JSON object; a config that needs code from its repository (remote_code.json) is
  skipped (remote_code); a sub-config that is not an object, or holds a value transformers' validation
  refuses, is the model's config_error naming the field.
* A random forward is made deterministic and a transformers-4 composite layout gets its text vocabulary
  (harness_tasks), so that device and reference compute the same function.
* The task (--task, else from config.architectures) gives the family (tasks.json) and the model class.
* full: the directory must hold a transformers safetensors checkpoint (model.safetensors or an index), else
  skipped no_safetensors; pickle weights are never loaded. arch: the config cut to --layers layers (seeded
  random weights later), skipped too_large when even that does not fit the memory budget by the fit formula
  (harness_host.fit_need).
* The family's inputs must be buildable from the config (harness_synthetic_inputs.check_inputs). When they are not,
  it is the model's config_error only when transformers cannot build the model's class from the config either; a config
  transformers loads and builds the model from is the scanner's error (harness_inputs:config:<field>): the harness
  failed to read it, not the model.

ConfigStage is a stage harness.Probe composes (harness_context.py: the state it shares).
"""

from __future__ import annotations

import contextlib
import json
import os

import harness_context
import harness_failures
import harness_host
import harness_inputs
import harness_synthetic_inputs
import harness_tasks

WEIGHT_SUFFIXES_PICKLE = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


# --- safetensors (which files are a checkpoint; never the pickle formats) -------

def safetensors_files(model_dir: str) -> tuple[list[str], list[str]]:
    """(files from_pretrained will load, other *.safetensors present).

    transformers loads model.safetensors or the shards named by model.safetensors.index.json;
    other files (consolidated.safetensors of the original Mistral layout, adapters, ...) are not
    a transformers checkpoint."""
    try:
        present = sorted(n for n in os.listdir(model_dir) if n.endswith(".safetensors"))
    except OSError:
        return [], []
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.isfile(idx):
        try:
            with open(idx, encoding="utf-8") as fh:
                names = sorted(set(json.load(fh).get("weight_map", {}).values()))
            files = [os.path.join(model_dir, n) for n in names]
            if files and all(os.path.isfile(f) for f in files):
                return files, [n for n in present if n not in names]
        except (OSError, ValueError, AttributeError):
            pass
    if "model.safetensors" in present:
        return [os.path.join(model_dir, "model.safetensors")], [n for n in present if n != "model.safetensors"]
    return [], present


def read_config_json(model_dir: str) -> dict:
    """The model's config.json as a JSON object; config_error when it is missing or not one."""
    path = os.path.join(model_dir, "config.json")
    if not os.path.isfile(path):
        raise harness_failures.ConfigError("no config.json in the model directory", "no config.json")
    with open(path, encoding="utf-8") as fh:
        try:
            raw = json.load(fh)
        except ValueError as e:
            raise harness_failures.ConfigError(f"config.json is not valid JSON: {e}", "invalid config.json") from e
    if not isinstance(raw, dict):
        raise harness_failures.ConfigError("config.json is not a JSON object", "invalid config.json")
    return raw


def refuse_config(raw: dict) -> None:
    """Skip a config that needs code from its repository (remote_code.json); config_error for a sub-config
    that is not an object or lacks what it needs (harness_tasks.check_subconfigs)."""
    why = harness_tasks.needs_remote_code(raw)
    if why:
        raise harness_failures.Skip("remote_code", f"{why}: it needs trust_remote_code, and the harness runs no code "
                      "from model repositories")
    incomplete = harness_tasks.check_subconfigs(raw)
    if incomplete:
        raise harness_failures.ConfigError(incomplete, "incomplete sub-config")


def require_checkpoint(model_dir: str) -> list[str]:
    """The safetensors files --mode full loads; skipped no_safetensors, saying what is there instead, when the
    directory has no transformers checkpoint (pickle weights are never loaded)."""
    files, other_st = safetensors_files(model_dir)
    if files:
        return files
    why_none = "no *.safetensors"
    if other_st:
        why_none = (f"no transformers safetensors checkpoint (model.safetensors or an index); only "
                    f"{', '.join(other_st[:3])}")
    pickles = [n for n in os.listdir(model_dir) if n.endswith(WEIGHT_SUFFIXES_PICKLE)]
    if pickles:
        why_none += f"; pickle weights ({', '.join(sorted(pickles)[:3])}) are never loaded"
    raise harness_failures.Skip("no_safetensors", f"--mode full asked but the model directory has {why_none}")


class ConfigStage(harness_context.Stage):
    """The config stage (see the module docstring), composed by harness.Probe."""

    def memory_budget(self) -> tuple[int | None, str]:
        # The scanner passes its plan's budget; the defaults below serve a harness run by hand.
        if self.args.memory_budget_bytes:
            return self.args.memory_budget_bytes, "--memory-budget-bytes"
        if self.target == "cpu":
            _, avail = harness_host.host_memory()
            return avail, "available host RAM"
        return self.dev.memory_bytes, self.dev.memory_source or "unknown"

    def bytes_needed(self, params: int) -> int:
        return harness_host.fit_need(params, self.torch.empty((), dtype=self.dtype).element_size(), self.target)

    def stage_config(self) -> None:
        """config.json to a model class and the config the load builds from, in the mode given (full: the
        checkpoint must be there; arch: the reduced config must fit the budget)."""
        with self.stage("config") as notes:
            raw = read_config_json(self.args.model_dir)
            import transformers

            with contextlib.suppress(Exception):
                transformers.utils.logging.disable_progress_bar()
            refuse_config(raw)
            config = self.load_config(transformers, raw)
            self.make_comparable(config, notes)
            self.resolve_model(transformers, config, notes)
            self.config = config
            if self.args.plan_note:
                notes.append(f"plan: {self.args.plan_note}")
            if self.mode == "full":
                require_checkpoint(self.args.model_dir)
            else:
                self.arch_config = self.shrink_config(config, notes)
                self.check_arch_fits(self.arch_config)
            notes.append(f"mode={self.mode} dtype={str(self.dtype).replace('torch.', '')}")
            self.check_config_inputs(self.arch_config if self.mode == "arch" else config)

    def make_comparable(self, config, notes: list) -> None:
        """Make a random forward deterministic and a transformers-4 composite layout embeddable (harness_tasks),
        so that device and reference compute the same function; the load then builds from this config."""
        det = harness_tasks.make_deterministic(config)
        vocab = harness_tasks.legacy_text_vocab(config)
        self.load_kwargs = {"config": config} if det or vocab else {}
        if det:
            notes.append("random forward made deterministic for the comparison: " + ", ".join(det))
        if vocab:
            notes.append("legacy config layout: " + ", ".join(vocab))

    def resolve_model(self, transformers, config, notes: list) -> None:
        """The task (--task, else from the config), its family and the model class; a task without a family is
        skipped (unsupported_task)."""
        task, family, tnote = harness_tasks.resolve_family(self.args.task or None, config)
        if task:
            self.task = task
        if tnote:
            notes.append(tnote)
        if family is None:
            raise harness_failures.Skip("unsupported_task", tnote or f"task {self.args.task!r} is not supported")
        self.family = family
        self.cls = self.resolve_class(transformers, config, task, family)
        notes.append(f"task={task} family={family} class={self.cls.__name__}")

    def check_arch_fits(self, arch_config) -> None:
        """Skipped too_large when the reduced model does not fit the memory budget by the fit formula."""
        params = self.count_params_meta(arch_config)
        if params is None:
            return
        budget, budget_src = self.memory_budget()
        need = self.bytes_needed(params)
        if budget is not None and need > budget:
            raise harness_failures.Skip(
                "too_large",
                f"even with {self.args.layers} layers the model needs ~{need / 2**30:.1f} "
                f"GiB > {budget / 2**30:.1f} GiB budget ({budget_src})",
            )

    def load_config(self, transformers, raw: dict):
        """AutoConfig from the model directory; a value transformers' validation refuses is the
        model's config_error naming the field (and the sub-config that holds it)."""
        try:
            return transformers.AutoConfig.from_pretrained(self.args.model_dir, trust_remote_code=False,
                                                           local_files_only=True)
        except Exception as e:  # huggingface_hub's StrictDataclassFieldValidationError, TypeError, ...
            named = harness_tasks.name_config_field(raw, str(e))
            if named is None:
                raise
            raise harness_failures.ConfigError(named, "invalid config field") from e

    def check_config_inputs(self, config) -> None:
        """Whose it is when the family's inputs cannot be built from the config (harness_inputs.IncompleteConfig
        naming the field): transformers loaded this config (AutoConfig), so the model's config_error only when the
        model's own class cannot be built from it either (config_refused); else the scanner's error
        (harness_inputs:config:<field>), never a verdict on the model."""
        import inspect

        try:
            accepted = set(inspect.signature(self.cls.forward).parameters)
        except (TypeError, ValueError):
            accepted = set()
        try:
            harness_synthetic_inputs.check_inputs(self.torch, self.family, config, self.cls.__name__, accepted)
        except harness_inputs.IncompleteConfig as e:
            refused = self.config_refused(config)
            if refused is not None:
                raise harness_failures.ConfigError(
                    f"config.json cannot drive the {self.family} inputs: {e}; and transformers "
                    f"cannot build {self.cls.__name__} from it: {refused}",
                    f"incomplete config {e.field}",
                ) from e
            raise harness_failures.SharedFailure(
                harness_failures.INPUTS_ORIGIN,
                f"not a verdict on the model: transformers loads this config and builds {self.cls.__name__} from it, "
                f"but the harness cannot build the {self.family} inputs from it: {e}",
                f"config:{e.field}") from e

    def config_refused(self, config) -> str | None:
        """Why the model's own class cannot be built from config (on the meta device: no memory), None when it
        can."""
        try:
            with self.torch.device("meta"):
                self.cls._from_config(config, dtype=self.dtype)
        except Exception as e:  # noqa: BLE001 - the model's own code refusing its config, whatever it raises
            return harness_failures.short_message(e, 300)
        return None

    def resolve_class(self, transformers, config, task, family):
        arch = (getattr(config, "architectures", None) or [None])[0]
        if arch:
            try:
                cls = getattr(transformers, arch, None)
            except Exception:  # noqa: BLE001 - a lazy import that fails
                cls = None
            if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
                return cls
        names = harness_tasks.TASK_AUTO_CLASSES.get(task, ()) + harness_tasks.AUTO_CLASSES[family]
        for name in names:
            auto = getattr(transformers, name)
            try:
                return auto._model_mapping[type(config)]
            except (KeyError, ValueError):
                continue
        raise harness_failures.ConfigError(
            f"no transformers model class for model_type {config.model_type!r} and task {task!r}",
            "no model class for model_type and task",
        )

    def shrink_config(self, config, notes):
        import copy

        cfg = copy.deepcopy(config)
        changes = harness_tasks.reduce_layers(cfg, self.args.layers)
        if getattr(cfg, "quantization_config", None) is not None:
            with contextlib.suppress(Exception):
                delattr(cfg, "quantization_config")
            changes.append("quantization_config dropped (random weights)")
        if changes:
            notes.append("arch: " + ", ".join(changes[:8]) + (" ..." if len(changes) > 8 else ""))
        return cfg

    def count_params_meta(self, config) -> int | None:
        torch = self.torch
        try:
            with torch.device("meta"):
                m = self.cls._from_config(config, dtype=self.dtype)
            n = sum(p.numel() for p in m.parameters())
            del m
            return n
        except Exception as e:  # noqa: BLE001 - the real build in load will report it properly
            harness_host.log(f"note: meta-device size estimate failed: {harness_failures.short_message(e, 200)}")
            return None
