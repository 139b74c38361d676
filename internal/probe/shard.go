package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// A sharded probe (Request.Devices > 1) runs one harness process per rank
// under one keeper (keeper.py), in one process group, each confined and
// limited as a one-device probe is, with the environment its rank needs
// (RankEnv). Rank 0 writes the probe's result; a rank that fails writes
// its own (result.rankR.json) and exits 3. The keeper ends the probe at
// the first rank that ends badly, kills the others, and reports how each
// ended (keeper.json), which the runner reads to say whose failure it was.

// MaxDevices bounds Request.Devices.
const MaxDevices = 64

// The sharding strategies a harness records (Result.Sharding): Request.Sharding
// may also be ShardAuto, the harness's choice (tp where transformers has a
// tensor-parallel plan for the model class, else fsdp).
const (
	ShardAuto = "auto"
	ShardTP   = "tp"
	ShardFSDP = "fsdp"
)

// DefaultCollectiveTimeout bounds one collective of a sharded probe (a rank
// waiting for a peer that hangs), unless Request.CollectiveTimeout says
// otherwise; never more than the probe's own timeout.
const DefaultCollectiveTimeout = 10 * time.Minute

// DefaultRankGrace is how long the other ranks get to end by themselves once
// rank 0 has written the result and ended (Config.RankGrace).
const DefaultRankGrace = 5 * time.Second

// Launch is what every rank of a sharded probe shares: where it runs, the
// host devices of its ranks, and the rendezvous.
type Launch struct {
	Target compat.Target
	// Chips are the host's devices, one per rank (rank r runs on
	// Chips[r]); nil leaves device selection to the runtime (cpu).
	Chips []int
	Ranks int
	// Device is the TPU as the Env stage named it ("TPU v6e"): the slice's
	// topology comes from its devices.json entry.
	Device string
	// MasterPort is torch.distributed's rendezvous port on 127.0.0.1;
	// SlicePorts one port per rank for TorchTPU's slice builder (tpu).
	MasterPort int
	SlicePorts []int
	// Session is TORCH_TPU_XPROF_SESSION_ID, one value for every rank.
	Session string
	// Threads is OMP_NUM_THREADS of the whole probe, shared by its ranks.
	Threads int
}

// RankEnv is the environment rank adds to the probe's for its process: the
// variables torch.distributed's env:// rendezvous reads (RANK, LOCAL_RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT; gloo on cpu), and per target the
// device the rank runs on. On tpu they are what
// torch.tpu.distributed.set_tpu_launch_env(nproc_per_node=N) decides in a
// launcher's parent for every rank alike (torch_tpu
// _internal/distributed/distributed.py; the keeper does not import torch,
// so the runner decides them): TORCH_TPU_SLICEBUILDER_ADDRESSES, one
// localhost:port per rank; TORCH_TPU_TOPOLOGY, the slice's topology
// (devices.json, as hardware.py's table); TORCH_TPU_XPROF_SESSION_ID. Each
// rank sees its one chip as TPU_VISIBLE_DEVICES (and TPU_VISIBLE_CHIPS),
// which torch_tpu's InitializeDistributedEnvironment keeps when it names a
// single device (csrc/common/environment.cc) and which it otherwise takes
// from LOCAL_RANK; that function derives the process bounds, port and
// addresses from these. The harness calls set_tpu_launch_env too, which
// never overwrites a variable that is set. On cuda a rank sees its GPU as
// CUDA_VISIBLE_DEVICES. As DeviceEnv does for a one-device probe, a rank
// is pinned the same way whatever the target (a cpu run loads neither
// runtime), so that a host's devices are accounted for alike.
// OMP_NUM_THREADS splits the probe's threads.
func RankEnv(l Launch, rank int) []string {
	env := []string{
		"RANK=" + strconv.Itoa(rank), "LOCAL_RANK=" + strconv.Itoa(rank), "WORLD_SIZE=" + strconv.Itoa(l.Ranks),
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + strconv.Itoa(l.MasterPort),
		"OMP_NUM_THREADS=" + strconv.Itoa(max(1, l.Threads/max(l.Ranks, 1))),
	}
	if rank < len(l.Chips) {
		chip := strconv.Itoa(l.Chips[rank])
		env = append(env, "TPU_VISIBLE_DEVICES="+chip, "TPU_VISIBLE_CHIPS="+chip, "CUDA_VISIBLE_DEVICES="+chip)
	}
	if l.Target == compat.TargetTPU {
		addrs := make([]string, len(l.SlicePorts))
		for i, p := range l.SlicePorts {
			addrs[i] = "localhost:" + strconv.Itoa(p)
		}
		env = append(env, "TORCH_TPU_SLICEBUILDER_ADDRESSES="+strings.Join(addrs, ","))
		if peak, ok := harness.MatchDevicePeak("tpu", l.Device); ok {
			if topo, ok := peak.Topology(l.Ranks); ok {
				env = append(env, "TORCH_TPU_TOPOLOGY="+topo)
			}
		}
		env = append(env, "TORCH_TPU_XPROF_SESSION_ID="+l.Session)
	}
	return env
}

// freePorts finds n distinct TCP ports free on 127.0.0.1 now (held open
// together, then closed, as portpicker does for TorchTPU's launcher).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("probe: a free port for the ranks: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// rankSpec is the keeper's RANKS argument.
type rankSpec struct {
	Ranks  []map[string]string `json:"ranks"`
	Status string              `json:"status"`
	GraceS float64             `json:"grace_s"`
}

// keeperSpec is the keeper's RANKS argument for req in wd: "" for a
// one-device probe.
func (r *Runner) keeperSpec(req Request, wd workDir, target compat.Target, env []string) (string, error) {
	if req.Devices <= 1 {
		return "", nil
	}
	ports, err := freePorts(1 + req.Devices)
	if err != nil {
		return "", err
	}
	l := Launch{Target: target, Chips: req.Chips, Ranks: req.Devices, MasterPort: ports[0], Threads: envThreads(env),
		Session: strconv.FormatInt(time.Now().UnixNano(), 10)}
	if target == compat.TargetTPU {
		l.SlicePorts = ports[1:]
		rt, _ := r.cachedRuntime(compat.TargetTPU)
		l.Device = rt.Device
	}
	spec := rankSpec{Status: wd.status, GraceS: r.cfg.RankGrace.Seconds()}
	for rank := range req.Devices {
		vars := map[string]string{}
		for _, kv := range RankEnv(l, rank) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		spec.Ranks = append(spec.Ranks, vars)
	}
	b, err := json.Marshal(spec)
	return string(b), err
}

// envThreads is OMP_NUM_THREADS of a probe's environment (scrubEnv always
// sets it).
func envThreads(env []string) int {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "OMP_NUM_THREADS="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 1
}

// rankEnd is how one rank ended by itself, as the keeper saw it.
type rankEnd struct {
	Rank        int    `json:"rank"`
	PID         int    `json:"pid"`
	Exit        *int   `json:"exit"`
	Signal      *int   `json:"signal"`
	MaxRSSBytes uint64 `json:"max_rss_bytes"`
}

// keeperReport is keeper.json: how the ranks of a sharded probe ended.
type keeperReport struct {
	Ranks    int       `json:"ranks"`
	Ends     []rankEnd `json:"ends"`
	Decisive *int      `json:"decisive"` // the rank whose end ended the probe
	Killed   []int     `json:"killed"`   // ranks the keeper killed
}

// readKeeperReport reads keeper.json; an error when there is none (the
// keeper was killed itself) or it is unreadable.
func readKeeperReport(path string) (keeperReport, error) {
	var rep keeperReport
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	if len(b) > MaxResultBytes {
		return rep, errors.New("keeper report too large")
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("keeper report: %w", err)
	}
	return rep, nil
}

// end is how rank r ended by itself; false when the keeper killed it.
func (k keeperReport) end(r int) (rankEnd, bool) {
	for _, e := range k.Ends {
		if e.Rank == r {
			return e, true
		}
	}
	return rankEnd{}, false
}

// failedRank is the rank other than 0 whose failure ended the probe (it
// died, or exited other than 0); false when rank 0 ended it, or the report
// says no rank failed.
func (k keeperReport) failedRank() (int, bool) {
	if k.Decisive == nil || *k.Decisive == 0 {
		return 0, false
	}
	e, ok := k.end(*k.Decisive)
	if !ok || (e.Signal == nil && (e.Exit == nil || *e.Exit == 0)) {
		return 0, false
	}
	return *k.Decisive, true
}

// rankResultFile is where rank r writes its result when it fails: the
// harness's --result-file with ".rankR" before its extension.
func rankResultFile(result string, r int) string {
	ext := filepath.Ext(result)
	return strings.TrimSuffix(result, ext) + ".rank" + strconv.Itoa(r) + ext
}

// oomKills reads how many processes the kernel's out-of-memory killer has
// killed: in this process's memory cgroup (cgroup v2 memory.events, v1
// memory.oom_control: both count the kills of a global OOM too), else on
// the whole host (/proc/vmstat). ok is false when none of them can be read.
func oomKills() (n uint64, source string, ok bool) {
	for _, path := range oomCounterFiles() {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if n, ok := parseOOMKill(b); ok {
			return n, path, true
		}
	}
	return 0, "", false
}

// oomCounterFiles are the files oomKills tries, in order: this process's
// memory cgroup by /proc/self/cgroup, then the cgroup root mounted for it
// (a container's), then /proc/vmstat.
func oomCounterFiles() []string {
	var out []string
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				out = append(out, filepath.Join("/sys/fs/cgroup", parts[2], "memory.events"))
			case strings.Contains(","+parts[1]+",", ",memory,"):
				out = append(out, filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.oom_control"))
			}
		}
	}
	return append(out, "/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control", "/proc/vmstat")
}

// parseOOMKill finds the "oom_kill N" line of memory.events,
// memory.oom_control or /proc/vmstat.
func parseOOMKill(b []byte) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "oom_kill" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// oomWatch compares the out-of-memory killer's count over a probe.
type oomWatch struct {
	before uint64
	source string
	ok     bool
}

func watchOOM() oomWatch {
	n, src, ok := oomKills()
	return oomWatch{before: n, source: src, ok: ok}
}

// verdict says whether the OOM killer killed something since the watch
// began: "yes", "no", or "" when it cannot tell; and in words, for the
// message.
func (w oomWatch) verdict() (string, string) {
	if !w.ok {
		return "", ""
	}
	n, src, ok := oomKills()
	if !ok || src != w.source {
		return "", ""
	}
	words := fmt.Sprintf("oom_kill of %s: %d, then %d", src, w.before, n)
	if n > w.before {
		return "yes", words
	}
	return "no", words
}
