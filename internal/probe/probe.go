// Package probe runs the Python smoke-test harness on one model and turns
// whatever happens to it (a result, a hang, a crash, garbage) into a
// compat.Result. The harness it runs, and the tables it shares with the
// scanner, are internal/harness.
//
// Each probe is one harness process in its own process group, in a fresh
// working directory, with a scrubbed environment (no credentials, Hub
// offline), resource limits (data size, open files, no core dumps), a
// wall-clock limit and a bounded appetite for its output; a sharded probe
// is one such process per rank under one keeper (shard.go). Nothing the
// harness does can hang, crash or flood the scanner, and nothing the
// scanner's own environment does is held against the model.
package probe

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

// NoLimit as Config.MemLimitBytes or Config.MaxOpenFiles turns that limit off.
const NoLimit = math.MaxUint64

// Defaults of Config that are the runner's own (a probe's timeout and grace
// are config.DefaultTimeout and config.DefaultProbeGrace).
const (
	DefaultEnvTimeout   = 5 * time.Minute
	DefaultMaxOpenFiles = 8192
)

// InterruptedMessage is the message of a probe cut short because the
// scanner is shutting down (status error: not the model's fault).
const InterruptedMessage = "probe interrupted: scanner shutting down"

// ErrDeviceUnavailable is returned by Env when the requested target's
// device is not present on this host.
var ErrDeviceUnavailable = errors.New("device unavailable")

// Config configures a Runner. Every field but Python has a usable zero value.
type Config struct {
	// Python is the interpreter with torch and transformers (and torch_tpu
	// on a TPU host): a path, or a name looked up in PATH.
	Python string
	// Script, when set, is run instead of the embedded harness (tests use
	// stand-ins); its directory goes first on sys.path.
	Script string
	// Timeout is the wall-clock limit of one probe; config.DefaultTimeout
	// if zero.
	// Request.Timeout overrides it.
	Timeout time.Duration
	// EnvTimeout limits an Env run; DefaultEnvTimeout if zero.
	EnvTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL when a probe is
	// stopped; config.DefaultProbeGrace if zero.
	Grace time.Duration
	// MemLimitBytes is the harness's RLIMIT_DATA (writable private memory:
	// heap and anonymous maps); NoLimit means none. It must be set: the
	// scanner's share for each probe is scan.ProbeMemLimit, which its plan
	// budgets against. Importing torch and transformers takes about 1 GiB
	// of it already.
	MemLimitBytes uint64
	// MaxOpenFiles is the harness's RLIMIT_NOFILE; DefaultMaxOpenFiles if
	// zero, NoLimit for the inherited limit.
	MaxOpenFiles uint64
	// ExtraEnv are KEY=VALUE additions to the harness's environment (PJRT
	// or TPU settings, OMP_NUM_THREADS). Credentials (names holding TOKEN,
	// SECRET, KEY, PASSWORD, ...), the variables the runner pins (HOME,
	// TMPDIR, HF_HUB_OFFLINE, ...) and the harness's test switch
	// (HARNESS_TEST_INJECT) are refused.
	ExtraEnv []string
	// Environ is the environment the allow-listed accelerator variables are
	// taken from (TPU_*, PJRT_*, LIBTPU_*, XLA_*, CUDA_*, PATH, ...); nil
	// means os.Environ().
	Environ []string
	// TempDir holds the extracted harness and each probe's working
	// directory; os.TempDir() if empty.
	TempDir string
	// Logger receives one line per probe; slog.Default() if nil.
	Logger *slog.Logger
	// RankGrace is how long the other ranks of a sharded probe get to end
	// by themselves once rank 0 has; DefaultRankGrace if zero.
	RankGrace time.Duration
	// NoLandlock runs the harness without its Landlock confinement (the
	// limits, the scrubbed environment and the process group stay): for a
	// host whose accelerator driver fails under it, which Env detects and
	// names (ErrConfinedDevice).
	NoLandlock bool
	// TCMalloc is the tcmalloc library preloaded into the harness
	// (LD_PRELOAD; torch_tpu asks for it): "" finds the first of
	// TCMallocPaths (none installed: no preload), NoTCMalloc preloads
	// nothing. The harness records whether it ran with it (Runtime.TCMalloc).
	TCMalloc string
	// HostRoot stands for / in the harness's TPU check (its PCI scan reads
	// sys/bus/pci/devices and dev/vfio under it): tests give it a fake tree
	// with a chip. "" is /.
	HostRoot string
}

// NoTCMalloc as Config.TCMalloc preloads nothing.
const NoTCMalloc = "none"

// Runner runs harness processes. Its methods are safe for concurrent use:
// the scanner runs one probe per device at a time. Close removes its files.
type Runner struct {
	cfg        Config
	python     string
	script     string
	harnessDir string // extracted embedded harness; "" with Config.Script
	digest     string
	memLimit   uint64 // 0 = none
	nofile     uint64 // 0 = inherited
	log        *slog.Logger
	preload    string // LD_PRELOAD of the harness (tcmalloc), "" for none
	confine    *confiner
	found      *envCache // what Env found; shared with the ForDevice runners
	pinned     bool      // a ForDevice runner: its processes see only device
	device     int
}

// envCache is what Env found, shared by a runner and its ForDevice runners.
type envCache struct {
	mu   sync.Mutex
	envs map[compat.Target]compat.Runtime // per target
	auto compat.Target                    // what Env(auto) resolved to, "" before
	// kernels is the TorchTPU kernel table (KernelTable), read once;
	// kmu serialises its reading.
	kmu     sync.Mutex
	kernels kernelCache
}

// NewRunner checks cfg, fills its defaults and writes the embedded harness
// to a private directory (unless cfg.Script overrides it).
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.Python == "" {
		return nil, errors.New("probe: no python interpreter configured")
	}
	py, err := exec.LookPath(cfg.Python)
	if err != nil {
		return nil, fmt.Errorf("probe: python: %w", err)
	}
	// The harness runs in its own working directory: paths must be absolute.
	if py, err = filepath.Abs(py); err != nil {
		return nil, fmt.Errorf("probe: python: %w", err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = config.DefaultTimeout
	}
	if cfg.EnvTimeout <= 0 {
		cfg.EnvTimeout = DefaultEnvTimeout
	}
	if cfg.Grace <= 0 {
		cfg.Grace = config.DefaultProbeGrace
	}
	if cfg.RankGrace <= 0 {
		cfg.RankGrace = DefaultRankGrace
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.TempDir, err = filepath.Abs(cfg.TempDir); err != nil {
		return nil, fmt.Errorf("probe: temp dir: %w", err)
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.HostRoot != "" {
		if cfg.HostRoot, err = filepath.Abs(cfg.HostRoot); err != nil {
			return nil, fmt.Errorf("probe: host root: %w", err)
		}
	}
	r := &Runner{cfg: cfg, python: py, log: cfg.Logger, found: &envCache{}}
	if r.log == nil {
		r.log = slog.Default()
	}
	enableSubreaper(r.log)
	switch cfg.TCMalloc {
	case "":
		r.preload = FindTCMalloc(TCMallocPaths)
	case NoTCMalloc:
	default:
		if r.preload, err = filepath.Abs(cfg.TCMalloc); err != nil {
			return nil, fmt.Errorf("probe: tcmalloc: %w", err)
		}
	}
	if _, dropped := scrubEnv(nil, cfg.ExtraEnv, "", "", ""); len(dropped) > 0 {
		r.log.Warn("probe: ExtraEnv entries refused (credentials, variables the runner pins, or test switches)",
			"names", strings.Join(dropped, ","))
	}
	switch cfg.MemLimitBytes {
	case 0:
		return nil, errors.New("probe: no memory limit configured (Config.MemLimitBytes; NoLimit for none)")
	case NoLimit:
	default:
		r.memLimit = cfg.MemLimitBytes
	}
	switch cfg.MaxOpenFiles {
	case 0:
		r.nofile = DefaultMaxOpenFiles
	case NoLimit:
	default:
		r.nofile = cfg.MaxOpenFiles
	}
	if cfg.Script != "" {
		abs, err := filepath.Abs(cfg.Script)
		if err != nil {
			return nil, fmt.Errorf("probe: script: %w", err)
		}
		if r.digest, err = fileDigest(abs); err != nil {
			return nil, fmt.Errorf("probe: script: %w", err)
		}
		r.script = abs
	} else {
		dir, script, err := harness.Extract(cfg.TempDir)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		r.harnessDir, r.script, r.digest = dir, script, harness.Digest()
	}
	r.confine = &confiner{python: py, codeDir: filepath.Dir(r.script), log: r.log, off: cfg.NoLandlock}
	for _, p := range []string{r.preload, cfg.HostRoot} {
		if p != "" {
			r.confine.read = append(r.confine.read, p)
		}
	}
	logConfinement(r.log, cfg.NoLandlock)
	return r, nil
}

// Close removes the extracted harness. Probes still running keep working
// until they end; none should be started after Close.
func (r *Runner) Close() error {
	if r.harnessDir == "" {
		return nil
	}
	if err := os.RemoveAll(r.harnessDir); err != nil {
		return fmt.Errorf("probe: close: %w", err)
	}
	return nil
}

// ForDevice is a runner whose harness processes are pinned to device i of
// the host (DeviceEnv), for one probe per device (--devices N). It shares
// this runner's harness files and what its Env found: the TPU generation,
// which sets the process bounds, is the device name of the last Env that
// found a TPU. Closing it does nothing; close this runner when all are done.
func (r *Runner) ForDevice(i int) *Runner {
	return &Runner{cfg: r.cfg, python: r.python, script: r.script, digest: r.digest, memLimit: r.memLimit,
		nofile: r.nofile, log: r.log.With("device", i), preload: r.preload, confine: r.confine, found: r.found,
		pinned: true, device: i}
}

// deviceEnv is the pinning environment of a ForDevice runner, nil otherwise.
func (r *Runner) deviceEnv() []string {
	if !r.pinned {
		return nil
	}
	rt, _ := r.cachedRuntime(compat.TargetTPU)
	return DeviceEnv(r.device, rt.Device)
}

// HarnessDigest identifies the harness code the runner runs ("sha256:" and
// 12 hex digits). It fills Runtime.Harness when the harness reports no
// version of its own.
func (r *Runner) HarnessDigest() string { return r.digest }

// Request is one probe of one model at one revision.
type Request struct {
	ModelID     string        // Hub id, "Qwen/Qwen3-0.6B"
	Revision    string        // commit sha of the snapshot
	SnapshotDir string        // the snapshot in the Hub cache layout (…/snapshots/<sha>)
	Task        string        // Hub pipeline tag; "" lets the harness decide from the config
	Target      compat.Target // "" means auto
	// Mode is full or arch, as the scan's plan decided it (scan.Plan): the
	// harness executes it and chooses no mode itself. Auto ("" too) is
	// passed on as asked; the real harness refuses it (exit 2, the
	// scanner's error), so only a stand-in resolves it.
	Mode    compat.Mode
	Timeout time.Duration // 0 means the Runner's

	// MemoryBudgetBytes is the plan's memory budget for the model (bytes;
	// 0 when unknown): the harness sizes arch mode against it (and auto).
	MemoryBudgetBytes int64
	// PlanNote says why the plan chose this probe; the harness notes it in
	// its config stage.
	PlanNote string
	// NoTrain, when set, skips the train step with this reason (the
	// plan's: the weights, gradients and AdamW state do not fit).
	NoTrain string

	// Devices is how many devices the probe is sharded over: one harness
	// process (rank) each (shard.go); 0 or 1 is one process. Chips, when
	// set, are the host's devices the probe holds, one per rank: each rank
	// (a one-device probe too) is pinned to its own (RankEnv, DeviceEnv);
	// nil leaves the pinning to the runner (ForDevice) or to none.
	Devices int
	Chips   []int
	// Sharding is how a sharded probe splits the model: ShardAuto (""
	// too), ShardTP or ShardFSDP.
	Sharding string
	// CollectiveTimeout bounds one collective of a sharded probe;
	// DefaultCollectiveTimeout (at most Timeout) when zero.
	CollectiveTimeout time.Duration

	// Harness knobs; zero leaves the harness's default.
	Layers, SeqLen, NewTokens, Steps int
	NoCompile, NoGenerate            bool
	// NoModes runs none of the verdict matrix's extra work (the train
	// step, TorchTPU's eager modes, the second precision): make bench's
	// baselines only.
	NoModes bool
	// NoOpsTrace traces no ops for the TorchTPU prediction
	// (harness_ops.py): make bench's baseline only.
	NoOpsTrace bool
}

// ranks is how many harness processes the probe runs.
func (req Request) ranks() int { return max(req.Devices, 1) }

// args are the harness's command-line arguments for req.
func (req Request) args(resultFile string) []string {
	a := []string{
		"--model-dir", req.SnapshotDir,
		"--model-id", req.ModelID,
		"--revision", req.Revision,
		"--target", string(req.Target),
		"--mode", string(req.Mode),
		"--task", req.Task,
		"--result-file", resultFile,
	}
	num := func(flag string, v int64) {
		if v > 0 {
			a = append(a, flag, strconv.FormatInt(v, 10))
		}
	}
	num("--seq-len", int64(req.SeqLen))
	num("--new-tokens", int64(req.NewTokens))
	num("--layers", int64(req.Layers))
	num("--steps", int64(req.Steps))
	num("--memory-budget-bytes", req.MemoryBudgetBytes)
	if req.PlanNote != "" {
		a = append(a, "--plan-note", req.PlanNote)
	}
	if req.NoTrain != "" {
		a = append(a, "--no-train", req.NoTrain)
	}
	if req.NoCompile {
		a = append(a, "--no-compile")
	} else if req.Timeout > 0 {
		// the harness bounds its compile stage to what is left of the probe's limit, so that a slow compile
		// leaves the eager verdict instead of timing the whole probe out (harness_compile.compile_budget)
		a = append(a, "--deadline-s", strconv.FormatFloat(req.Timeout.Seconds(), 'f', -1, 64))
	}
	if req.NoModes {
		a = append(a, "--no-modes")
	}
	if req.NoOpsTrace {
		a = append(a, "--no-ops-trace")
	}
	if req.NoGenerate {
		a = append(a, "--no-generate")
	}
	if req.ranks() > 1 {
		sharding := req.Sharding
		if sharding == "" {
			sharding = ShardAuto
		}
		a = append(a, "--devices", strconv.Itoa(req.ranks()), "--sharding", sharding,
			"--collective-timeout-s", strconv.FormatFloat(req.collectiveTimeout().Seconds(), 'f', -1, 64))
	}
	return a
}

// collectiveTimeout is CollectiveTimeout, its default, never past Timeout.
func (req Request) collectiveTimeout() time.Duration {
	t := req.CollectiveTimeout
	if t <= 0 {
		t = DefaultCollectiveTimeout
	}
	if req.Timeout > 0 {
		t = min(t, req.Timeout)
	}
	return t
}

// Probe runs the harness on req and always returns a Result. The harness's
// own verdict is kept when it wrote a valid one; a hang becomes timeout, a
// death by signal crash, an allocation failure oom, and anything that is the
// scanner's problem (no interpreter, an invalid result, a shutdown) error.
// Target, Revision, TestedAt, DurationS, Mode and Repro are filled in here.
func (r *Runner) Probe(ctx context.Context, req Request) compat.Result {
	start := time.Now()
	if req.Target == "" {
		req.Target = compat.TargetAuto
	}
	if req.Mode == "" {
		req.Mode = compat.ModeAuto
	}
	p := &probeRun{r: r, req: req, start: start, target: req.Target}
	res := r.probe(ctx, p)
	r.predict(ctx, &res)
	r.log.Info("probe done", "model", req.ModelID, "revision", req.Revision,
		"target", res.Target, "mode", derefMode(res.Mode), "status", res.Status,
		"stage", derefStage(res.Stage), "duration_s", res.DurationS)
	return res
}

func (r *Runner) probe(ctx context.Context, p *probeRun) compat.Result {
	req := p.req
	if _, err := compat.ParseTarget(string(req.Target)); err != nil {
		return p.scannerError(compat.StageEnv, "probe: "+err.Error(), nil)
	}
	if _, err := compat.ParseMode(string(req.Mode)); err != nil {
		return p.scannerError(compat.StageEnv, "probe: "+err.Error(), nil)
	}
	if req.ModelID == "" {
		return p.scannerError(compat.StageEnv, "probe: no model id", nil)
	}
	if n := req.ranks(); n > MaxDevices || (req.Chips != nil && len(req.Chips) != n) {
		return p.scannerError(compat.StageEnv, fmt.Sprintf("probe: %d devices on chips %v", n, req.Chips), nil)
	}
	if s := req.Sharding; s != "" && s != ShardAuto && s != ShardTP && s != ShardFSDP {
		return p.scannerError(compat.StageEnv, fmt.Sprintf("probe: sharding %q: want auto, tp or fsdp", s), nil)
	}
	// The harness runs in its own working directory: paths must be absolute.
	if abs, err := filepath.Abs(req.SnapshotDir); err == nil {
		req.SnapshotDir = abs
	}
	if fi, err := os.Stat(req.SnapshotDir); err != nil || !fi.IsDir() {
		return p.scannerError(compat.StageEnv, fmt.Sprintf("probe: snapshot directory %q is missing", req.SnapshotDir), nil)
	}
	// Results the runner makes up itself need the real target: resolve
	// auto the way the harness will.
	if req.Target == compat.TargetAuto {
		p.target = r.autoTarget()
		if p.target == "" {
			t, _, err := r.Env(ctx, compat.TargetAuto)
			if err != nil {
				p.target = compat.TargetCPU // what auto means without a usable TPU
				if ctx.Err() != nil {
					return p.interrupted("", nil)
				}
				return p.scannerError(compat.StageEnv, "probe: resolving target auto: "+err.Error(), nil)
			}
			p.target = t
		}
	}
	wd, err := r.newWorkDir("probe")
	if err != nil {
		return p.scannerError(compat.StageEnv, err.Error(), nil)
	}
	defer wd.remove()

	timeout := req.Timeout
	if timeout <= 0 {
		timeout = r.cfg.Timeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req.Timeout = timeout
	spec := r.spec(ctx, wd, req.SnapshotDir, req.args(wd.result), req.Chips)
	if spec.ranks, err = r.keeperSpec(req, wd, p.target, spec.env); err != nil {
		return p.scannerError(compat.StageEnv, err.Error(), nil)
	}
	oom := watchOOM()
	out := runProc(pctx, spec)
	p.wall = out.wall
	out.oomKiller, out.oomWords = oom.verdict()

	if out.startErr != nil {
		return p.scannerError(compat.StageEnv, fmt.Sprintf("probe: cannot start %s: %v", r.python, out.startErr), nil)
	}
	return p.outcome(ctx, wd, out, timeout)
}

// outcome turns how the harness ended into the probe's result.
func (p *probeRun) outcome(ctx context.Context, wd workDir, out procOutcome, timeout time.Duration) compat.Result {
	r, req := p.r, p.req
	result := wd.result
	if req.ranks() > 1 && !out.killed {
		// A rank other than 0 ended the probe: its failure is the
		// probe's, whatever rank 0 made of losing its peer. Without a
		// report (the keeper itself was killed) the keeper's end is what
		// is known, as for one process.
		if rep, err := readKeeperReport(wd.status); err == nil {
			if rank, ok := rep.failedRank(); ok {
				return p.rankFailed(rank, rep, rankResultFile(wd.result, rank), out)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("probe: the ranks' keeper report is unreadable", "model_id", req.ModelID, "err", err)
		}
	}

	if st, ok := out.rankStages[0]; ok && req.ranks() > 1 { // rank 0's own stage
		out.lastStage = st
	}
	// A valid result stands even if the process then failed to exit (a
	// crash in interpreter teardown, a worker thread that never ends): the
	// harness writes it atomically, once, after its last stage.
	res, err := readResult(result)
	if err == nil {
		res, err = p.accept(res, out)
	}
	switch {
	case err == nil:
		if out.killed || !out.state.Success() {
			r.log.Warn("probe: harness wrote a result but did not exit cleanly",
				"model", req.ModelID, "exit", out.state.String(), "killed", out.killed)
		}
		return res
	case out.killed && ctx.Err() != nil:
		return p.interrupted(out.lastStage, out.stderrTail)
	case out.killed:
		return p.timeout(timeout, out)
	case !errors.Is(err, os.ErrNotExist):
		return p.scannerError("", "probe: harness wrote an invalid result: "+err.Error(), out.stderrTail)
	}
	return p.noResult(out)
}

// spec is the process that runs the harness with args in wd, on snapshot
// ("" for none): the keeper with the limits, the scrubbed environment with
// the run's mark, and the run's confinement. A one-device probe on chips
// (one) is pinned to it (DeviceEnv); the ranks of a sharded one are pinned
// by their rank's environment (keeperSpec sets spec.ranks).
func (r *Runner) spec(ctx context.Context, wd workDir, snapshot string, args []string, chips []int) procSpec {
	extra := slices.Clone(r.cfg.ExtraEnv)
	switch {
	case len(chips) == 1:
		rt, _ := r.cachedRuntime(compat.TargetTPU)
		extra = append(extra, DeviceEnv(chips[0], rt.Device)...)
	case len(chips) == 0:
		extra = append(extra, r.deviceEnv()...)
	}
	env, _ := scrubEnv(r.cfg.Environ, extra, wd.home, wd.tmp, r.preload) // refusals logged by NewRunner
	mark := rand.Text()
	env = append(env, probeMarkVar+"="+mark)
	if r.cfg.HostRoot != "" {
		args = append(slices.Clone(args), "--host-root", r.cfg.HostRoot)
	}
	python, _ := r.confine.interpreter(ctx)
	spec := procSpec{
		python: python,
		script: r.script,
		args:   args,
		limits: []string{strconv.FormatUint(r.memLimit, 10), strconv.FormatUint(r.nofile, 10)},
		dir:    wd.cwd,
		env:    env,
		grace:  r.cfg.Grace,
		mark:   mark,
	}
	if !r.confine.off {
		pol := r.confine.policy(ctx, wd, snapshot, env)
		spec.policy = &pol
	}
	return spec
}

// workDir is the private directory of one harness run. status is where
// the keeper of a sharded probe reports how its ranks ended.
type workDir struct {
	root, home, tmp, cwd, result, status string
}

func (r *Runner) newWorkDir(kind string) (workDir, error) {
	root, err := os.MkdirTemp(r.cfg.TempDir, "torchtpu-"+kind+"-")
	if err != nil {
		return workDir{}, fmt.Errorf("probe: workdir: %w", err)
	}
	wd := workDir{
		root:   root,
		home:   filepath.Join(root, "home"),
		tmp:    filepath.Join(root, "tmp"),
		cwd:    filepath.Join(root, "cwd"),
		result: filepath.Join(root, "result.json"),
		status: filepath.Join(root, "keeper.json"),
	}
	for _, d := range []string{wd.home, wd.tmp, wd.cwd} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(root)
			return workDir{}, fmt.Errorf("probe: workdir: %w", err)
		}
	}
	return wd, nil
}

func (wd workDir) remove() { os.RemoveAll(wd.root) }

// PhysicalMemory is the memory this process may use, in bytes: MemTotal of
// /proc/meminfo, or its cgroup's memory limit where that is lower (a pod's
// or container's limit: v2 memory.max, v1 memory.limit_in_bytes). Each
// probe's data limit and the cpu budget are shares of it (scan.ProbeMemLimit).
func PhysicalMemory() (uint64, error) { return memoryLimit("/") }

// memoryLimit is PhysicalMemory with root standing for / (tests give it a
// fake tree): the smaller of root/proc/meminfo's MemTotal and cgroupLimit.
func memoryLimit(root string) (uint64, error) {
	f, err := os.Open(filepath.Join(root, "proc", "meminfo"))
	if err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	defer f.Close()
	var total uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meminfo: %w", err)
			}
			total = kb << 10
			break
		}
	}
	if total == 0 {
		return 0, errors.New("meminfo: no MemTotal")
	}
	if lim := cgroupLimit(root); lim > 0 && lim < total {
		return lim, nil
	}
	return total, nil
}

// cgroupNoLimit: a cgroup v1 limit at or above it is "no limit" (v1 writes
// the largest page-aligned int64, 9223372036854771712, for none).
const cgroupNoLimit = 1 << 62

// cgroupLimit is the memory limit of this process's cgroup under root, 0
// for none: the smallest limit of its cgroup and the cgroup's ancestors
// (each bounds it), read from root/proc/self/cgroup and the cgroup file
// systems under root/sys/fs/cgroup: v2 ("0::/path", memory.max, "max" for
// none) and v1 (the memory controller's "N:memory:/path",
// memory/…/memory.limit_in_bytes). In a container the process's cgroup is
// often the mount's own root (a cgroup namespace shows "/", a v1 bind
// mount shows the host's path, absent under the mount): the mount's root
// counts too.
func cgroupLimit(root string) uint64 {
	data, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return 0
	}
	var best uint64
	take := func(path string, none string) {
		raw, err := os.ReadFile(path)
		if err != nil {
			return
		}
		v := strings.TrimSpace(string(raw))
		if v == none {
			return
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 || n >= cgroupNoLimit {
			return
		}
		if best == 0 || n < best {
			best = n
		}
	}
	walk := func(mount, cg, file, none string) {
		cg = filepath.Clean("/" + cg)
		for {
			take(filepath.Join(mount, cg, file), none)
			if cg == "/" {
				return
			}
			cg = filepath.Dir(cg)
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			walk(filepath.Join(root, "sys", "fs", "cgroup"), parts[2], "memory.max", "max")
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			walk(filepath.Join(root, "sys", "fs", "cgroup", "memory"), parts[2], "memory.limit_in_bytes", "")
		}
	}
	return best
}

func derefMode(m *compat.Mode) string {
	if m == nil {
		return ""
	}
	return string(*m)
}

func derefStage(s *compat.Stage) string {
	if s == nil {
		return ""
	}
	return string(*s)
}
