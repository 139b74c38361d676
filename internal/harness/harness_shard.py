"""Sharded probes: one model over several devices, one harness process (rank) per device.

The Go runner starts the ranks under one keeper (internal/probe/keeper.py) with the variables of
torch.distributed's env:// rendezvous (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and,
on tpu, what torch.tpu.distributed.set_tpu_launch_env decides for every rank alike
(TORCH_TPU_SLICEBUILDER_ADDRESSES, TORCH_TPU_TOPOLOGY, TORCH_TPU_XPROF_SESSION_ID) with each rank's
chip as TPU_VISIBLE_DEVICES (internal/probe/shard.go RankEnv). TorchTPU's design is one process per
chip, each seeing its chip as tpu:0 (torch_tpu _internal/distributed/distributed.py); every rank here
does the same.

* init: torch.distributed.init_process_group with the target's backend ("tpu" on tpu, torch_tpu's
  registered backend; gloo on cpu; nccl on cuda) and the probe's collective timeout.
* the mesh: on tpu torch.tpu.distributed.topology_aware_mesh((N,)) orders the ranks by the chips'
  physical adjacency; elsewhere ranks 0..N-1.
* sharding (choose): transformers' own tensor-parallel plan (tp_plan "auto": the model class's
  _tp_plan and its config's base_model_tp_plan) where the model has one and N divides its attention
  and key/value heads, else FSDP2 (torch.distributed.fsdp.fully_shard on every block of the model's
  largest ModuleList, then on the root). Which one ran is result.sharding.
* rank 0 writes the one Result; a rank other than 0 that fails writes its own (rank_result_path)
  and exits RANK_FAILED; a passing rank other than 0 writes nothing.
"""

from __future__ import annotations

import datetime
import os
import sys

# Exit status of a rank other than 0 that wrote its failure (the keeper ends the probe on it).
RANK_FAILED = 3

BACKENDS = {"cpu": "gloo", "tpu": "tpu", "cuda": "nccl"}
SHARDINGS = ("auto", "tp", "fsdp")


def rank_result_path(path: str, rank: int) -> str:
    """result.json -> result.rank1.json: where rank r (not 0) writes its failure (as Go's rankResultFile)."""
    base, ext = os.path.splitext(path)
    return f"{base}.rank{rank}{ext}"


def rank_of(world: int) -> int:
    """This process's rank: RANK of the environment the runner set (0 for a one-device probe)."""
    if world <= 1:
        return 0
    rank, size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is None or size != str(world):
        raise RuntimeError(f"a sharded probe of {world} devices needs RANK and WORLD_SIZE={world} in its environment "
                           f"(got RANK={rank!r}, WORLD_SIZE={size!r})")
    return int(rank)


def launch_env(torch, world: int) -> str:
    """On tpu, before the runtime starts: torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=world), which
    fills only what the runner did not set (it never overwrites a variable). Returns a note."""
    dist = getattr(getattr(torch, "tpu", None), "distributed", None)
    fn = getattr(dist, "set_tpu_launch_env", None)
    if fn is None:
        return "torch.tpu.distributed.set_tpu_launch_env not found: the runner's launch variables stand"
    fn(nproc_per_node=world)
    return (f"set_tpu_launch_env(nproc_per_node={world}): topology {os.environ.get('TORCH_TPU_TOPOLOGY', '?')}, "
            f"chip {os.environ.get('TPU_VISIBLE_DEVICES', '?')}")


def init(torch, target: str, world: int, rank: int, timeout_s: float) -> str:
    """Joins the process group of the probe's ranks; returns the backend."""
    import torch.distributed as dist

    backend = BACKENDS[target]
    dist.init_process_group(backend=backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return backend


def mesh_ranks(torch, target: str, world: int):
    """The ranks of the 1-D mesh, in device order: topology-aware on tpu."""
    if target == "tpu":
        return torch.tpu.distributed.topology_aware_mesh((world,))
    return torch.arange(world)


def device_mesh(torch, target: str, world: int):
    from torch.distributed.device_mesh import DeviceMesh

    return DeviceMesh(target, mesh_ranks(torch, target, world).reshape(world))


def has_tp_plan(model_or_cls, config) -> bool:
    """Whether transformers has a tensor-parallel plan for the model: the class's _tp_plan or its config's
    base_model_tp_plan (PreTrainedModel.supports_tp_plan's sources)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return bool(getattr(model_or_cls, "_tp_plan", None)) or bool(getattr(text, "base_model_tp_plan", None))


def heads(config) -> tuple[int | None, int | None]:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    h = getattr(text, "num_attention_heads", None) or getattr(text, "n_head", None)
    kv = getattr(text, "num_key_value_heads", None) or h
    return (h if isinstance(h, int) else None), (kv if isinstance(kv, int) else None)


def choose(asked: str, cls, config, world: int) -> tuple[str, str]:
    """(tp or fsdp, why): tp where the model has a tensor-parallel plan and world divides its heads."""
    plan = has_tp_plan(cls, config)
    h, kv = heads(config)
    divides = bool(h and kv and h % world == 0 and kv % world == 0)
    if asked == "fsdp":
        return "fsdp", "fsdp asked"
    if asked == "tp":
        return "tp", "tp asked"
    if plan and divides:
        return (
            "tp",
            f"tp: transformers' tensor-parallel plan for {cls.__name__}, {world} divides {h} heads and {kv} "
            "key/value heads",
        )
    if not plan:
        return "fsdp", f"fsdp: {cls.__name__} has no tensor-parallel plan in transformers"
    return "fsdp", f"fsdp: {world} does not divide {h} heads and {kv} key/value heads"


def distributed_config(world: int):
    from transformers.distributed import DistributedConfig

    return DistributedConfig(tp_plan="auto", tp_size=world)


def shard_tp(torch, model, target: str, world: int):
    """transformers' own tensor-parallel plan on the probe's mesh (PreTrainedModel.maybe_distribute_model, as
    from_pretrained applies it): parameters become DTensor shards, forward hooks do the collectives."""
    from torch.distributed.device_mesh import DeviceMesh
    from transformers.distributed.utils import TransformersDeviceMesh

    ranks = mesh_ranks(torch, target, world)
    dense = DeviceMesh(target, ranks.reshape(1, 1, 1, world), mesh_dim_names=("pp", "dp_replicate", "fsdp", "tp"))
    expert = DeviceMesh(target, ranks.reshape(1, 1, world, 1), mesh_dim_names=("pp", "dp_replicate", "efsdp", "ep"))
    return type(model).maybe_distribute_model(model, distributed_config(world), TransformersDeviceMesh(dense, expert))


def blocks(model):
    """The model's repeated blocks: its largest torch.nn.ModuleList (the decoder layers)."""
    import torch

    best = None
    for _, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and (best is None or len(mod) > len(best)):
            best = mod
    return list(best) if best is not None else []


def shard_fsdp(torch, model, target: str, world: int):
    """FSDP2: fully_shard on every block, then on the root (parameters gathered per block in forward)."""
    from torch.distributed.fsdp import fully_shard

    mesh = device_mesh(torch, target, world)
    for blk in blocks(model):
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def full_tensor(t):
    """A DTensor's full value (a collective: every rank calls it), else t."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def gather(obj, world: int) -> list:
    """obj of every rank (a collective)."""
    import torch.distributed as dist

    out = [None] * world
    dist.all_gather_object(out, obj)
    return out


def largest(values):
    known = [v for v in values if v is not None]
    return max(known) if known else None


def publish(key: str, value: str) -> None:
    """Rank 0 says something to the others through the rendezvous store (no collective)."""
    import torch.distributed as dist

    dist.distributed_c10d._get_default_store().set(key, value)


def await_rank0(key: str, timeout_s: float) -> str:
    """Waits for rank 0's word on key (the store, not a collective: rank 0 may take long, alone)."""
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    store.wait([key], datetime.timedelta(seconds=timeout_s))
    return store.get(key).decode()


def is_collective_timeout(e: BaseException) -> bool:
    """A collective or rendezvous that timed out waiting for a peer (gloo: "Timed out waiting Nms for recv
    operation"; the store: DistStoreError "timeout"; NCCL's watchdog: "Watchdog caught collective operation
    timeout")."""
    from harness_failures import exception_chain

    for x in exception_chain(e):
        name, text = type(x).__name__, str(x).lower()
        if "timed out waiting" in text or "collective operation timeout" in text:
            return True
        if name in ("DistStoreError", "DistNetworkError") and "timeout" in text:
            return True
    return False


class RankStop(Exception):
    """A rank other than 0 stops quietly: rank 0 failed, and its result says why."""


def timeout_class(e: BaseException, stage: str, rank: int, world: int, timeout_s: float) -> dict:
    """harness_failures.classify's shape for a collective that timed out: status timeout, naming the rank that
    waited for a peer in vain."""
    from harness_failures import short_message, traceback_tail

    return {"status": "timeout", "failure_class": "timeout", "op": None,
            "signature": f"timeout:{stage}" if stage else "timeout",
            "message": (f"rank {rank} of {world}: a collective of stage {stage} timed out after {timeout_s:g}s waiting "
                        f"for its peers (another rank hung or is far behind): {short_message(e, 300)}"),
            "log_tail": traceback_tail(e)}


def left_in_group() -> bool:
    """Whether this process is still in a process group (a failed rank: its peers may never answer)."""
    dist = sys.modules.get("torch.distributed")
    return dist is not None and dist.is_available() and dist.is_initialized()


COLLECTIVE_PREFIXES = ("c10d::",)


def collective_ms(prof) -> float | None:
    """Time spent in collectives during a profiled step: the c10d ops' CPU time (torch.profiler; on cpu with
    gloo the op blocks until the collective is done; with asynchronous backends it is only their launch)."""
    total, seen = 0.0, False
    for e in prof.key_averages():
        if e.key.startswith(COLLECTIVE_PREFIXES):
            total += e.cpu_time_total
            seen = True
    return round(total / 1000, 4) if seen else None


def finish(world: int) -> None:
    """The ranks' last collective: a barrier, then the group is torn down."""
    import torch.distributed as dist

    if world > 1 and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
