"""The host a probe runs on, as every stage sees it: the progress log on stderr (with a sharded rank's
prefix), the host's memory, and the fit formula of fit.json, the table the scanner's plan reads too
(internal/scan/plan.go, internal/harness/fit.go).

No torch, no transformers: harness.py and the stage modules (harness_config.py, harness_compare.py) import
it before anything heavy.
"""

from __future__ import annotations

import json
import os
import sys

# The fit formula's constants, shared with the scanner's plan (internal/scan/plan.go).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fit.json"), encoding="utf-8") as _fh:
    FIT = json.load(_fh)


def fit_need(params: int, dtype_bytes: int, target: str) -> int:
    """The fit formula (fit.json): bytes a model of params parameters takes in the budget's memory."""
    copies = FIT["targets"][target]["copies"]
    return int(params * dtype_bytes * copies * FIT["fit_factor"]) + FIT["fit_slack_bytes"]


# "[rank R] " for a rank of a sharded probe: the ranks share stderr, and the Go runner follows each rank's
# stage by it (internal/probe/proc.go stageTracker).
LOG_PREFIX = ""


def set_log_prefix(prefix: str) -> None:
    global LOG_PREFIX
    LOG_PREFIX = prefix


def log(msg: str) -> None:
    print(LOG_PREFIX + msg, file=sys.stderr, flush=True)


def host_memory() -> tuple[int | None, int | None]:
    """(total, available) host RAM in bytes, honouring RLIMIT_AS and a cgroup v2 limit (total is the
    smaller of MemTotal and the cgroup's memory.max, as the Go runner's probe.PhysicalMemory)."""
    total = avail = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            info = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in fh if l.split()[1:2] and l.split()[1].isdigit()}
        total, avail = info.get("MemTotal"), info.get("MemAvailable")
    except (OSError, ValueError, IndexError):
        pass
    limits = []
    try:
        import resource

        for lim in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            soft, _ = resource.getrlimit(lim)
            if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
                limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="utf-8") as fh:
            raw = fh.read().strip()
        if raw.isdigit():
            total = min(total, int(raw)) if total else int(raw)
            used = 0
            try:
                with open("/sys/fs/cgroup/memory.current", encoding="utf-8") as fh:
                    used = int(fh.read().strip())
            except (OSError, ValueError):
                pass
            limits.append(max(0, int(raw) - used))
    except OSError:
        pass
    if limits:
        avail = min([a for a in [avail] if a is not None] + limits)
    return total, avail
