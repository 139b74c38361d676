package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Every harness process runs confined by Landlock (where the kernel has it;
// best effort, logged once): it may write only its own run folder (result
// file, HOME, TMPDIR, working directory), /dev/shm and, when set, the
// inductor cache; it may read (and execute) only the model's snapshot and
// its blobs, the harness code, its interpreter (prefixes and sys.path),
// system libraries and tools, /proc and /sys; it may use the accelerator
// device nodes; and it may not signal processes outside its own domain
// (the scanner, other probes). Network access is not restricted.
//
// The restriction is applied between fork and exec, on the runner's side:
// a goroutine locks its OS thread, restricts that one thread
// (landlock_restrict_self without TSYNC, after PR_SET_NO_NEW_PRIVS, both
// per-thread) and starts the process from it, so the child inherits the
// domain before its first instruction. The thread then waits for the
// child and is never unlocked: a goroutine that exits locked takes its
// thread with it, so the restricted thread never runs other goroutines,
// and Go starts new threads from its template thread, never by cloning a
// locked one. The same long-lived thread makes Pdeathsig (which fires
// when the parent *thread* exits) mean "the scanner died". Re-executing
// the scanner binary as a launcher would work too, but not from test
// binaries or other programs that embed the runner.

// landlockConfig handles every filesystem right go-landlock knows and
// scopes signals, downgraded to what the kernel supports.
var landlockConfig = landlock.Config{
	HandledAccessFS: landlock.V11.HandledAccessFS,
	Scoped:          ll.ScopeSignal,
}.BestEffort()

// landlockABI is the kernel's Landlock ABI version; 0 without Landlock.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// systemRO are read-only (and executable) for every harness: system
// libraries and tools (compilers, ldconfig), configuration (ld.so.cache,
// passwd, localtime), and the kernel's views of processes and devices.
var systemRO = []string{"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/nix/store", "/proc", "/sys"}

// devRW are the device files any process may need; devIoctl the
// accelerator device nodes (globs), which also need ioctl.
var (
	devRW    = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	devIoctl = []string{"/dev/accel*", "/dev/vfio", "/dev/nvidia*", "/dev/nvidia-caps"}
)

// tpuRuntimeFiles are what libtpu writes outside TMPDIR: its lock file
// (one process per chip set) and its log folder.
const (
	tpuLockFile = "/tmp/libtpu_lockfile"
	tpuLogDir   = "/tmp/tpu_logs"
)

// policy is what one harness run may touch. Paths may be missing (skipped)
// or symlinks (the rule is on the target).
type policy struct {
	ro      []string // read and execute
	rw      []string // read, write, create, remove, rename within
	devices []string // read, write and ioctl
}

// confiner builds the policy of each run: the interpreter is asked once
// for its paths.
type confiner struct {
	python  string
	codeDir string   // the harness's directory
	read    []string // more paths it may read: the preloaded tcmalloc, Config.HostRoot
	log     *slog.Logger
	off     bool // Config.NoLandlock: runs are not confined

	once   sync.Once
	exe    string   // the interpreter's sys.executable
	interp []string // its prefixes and sys.path
}

// interpreter asks python once for its sys.executable and the paths it
// reads: prefixes and sys.path (the venv, the standard library,
// site-packages and what .pth files add), with the flags the harness runs
// with. The harness then runs sys.executable itself, not a launcher in
// front of it (a pyenv shim execs helpers from folders the harness may not
// read). On failure it falls back to python and its installation folder.
func (c *confiner) interpreter(ctx context.Context) (exe string, paths []string) {
	c.once.Do(func() {
		const script = `import json, os, sys
print(json.dumps({"exe": sys.executable, "paths": [sys.prefix, sys.base_prefix, sys.exec_prefix,
    sys.base_exec_prefix, os.path.dirname(os.path.realpath(sys.executable))] + [p for p in sys.path if p]}))`
		// Asked once for every run: not cut short by the first run's end.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var got struct {
			Exe   string   `json:"exe"`
			Paths []string `json:"paths"`
		}
		out, err := exec.CommandContext(ctx, c.python, "-I", "-c", script).Output()
		if err == nil {
			err = json.Unmarshal(out, &got)
		}
		if err == nil && !filepath.IsAbs(got.Exe) {
			err = fmt.Errorf("sys.executable %q is not an absolute path", got.Exe)
		}
		if err != nil {
			real, _ := filepath.EvalSymlinks(c.python)
			c.exe, c.interp = c.python, []string{filepath.Dir(filepath.Dir(c.python)), filepath.Dir(filepath.Dir(real))}
			c.log.Warn("probe: cannot ask the interpreter for its paths; the harness may read only its installation folder",
				"python", c.python, "err", err)
			return
		}
		c.exe, c.interp = got.Exe, got.Paths
	})
	return c.exe, c.interp
}

// policy is the policy of one run in wd on snapshot, with env the
// harness's environment.
func (c *confiner) policy(ctx context.Context, wd workDir, snapshot string, env []string) policy {
	p := policy{
		ro:      append(append(slices.Clone(systemRO), c.codeDir), c.read...),
		rw:      []string{wd.root, "/dev/shm"},
		devices: devRW,
	}
	_, interp := c.interpreter(ctx)
	p.ro = append(p.ro, interp...)
	if snapshot != "" {
		p.ro = append(p.ro, snapshot)
		// In the Hub cache layout the snapshot's files are links into the
		// repo's blobs/ (models--org--name/snapshots/<sha> → ../../blobs).
		p.ro = append(p.ro, filepath.Join(filepath.Dir(filepath.Dir(snapshot)), "blobs"))
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "LD_LIBRARY_PATH":
			for _, d := range filepath.SplitList(v) {
				if filepath.IsAbs(d) {
					p.ro = append(p.ro, d)
				}
			}
		case "TORCHINDUCTOR_CACHE_DIR":
			// Shared between runs by choice of whoever set it (tests do).
			if filepath.IsAbs(v) && os.MkdirAll(v, 0o700) == nil {
				p.rw = append(p.rw, v)
			}
		}
	}
	for _, g := range devIoctl {
		m, _ := filepath.Glob(g)
		p.devices = append(p.devices, m...)
	}
	if tpuHost(p.devices) {
		p.rw = append(p.rw, tpuRuntimePaths()...)
	}
	return p
}

// tpuHost reports whether the device nodes include a TPU's (/dev/accel*,
// /dev/vfio).
func tpuHost(devices []string) bool {
	for _, d := range devices {
		if strings.HasPrefix(d, "/dev/accel") || d == "/dev/vfio" {
			return true
		}
	}
	return false
}

// tpuRuntimePaths makes sure libtpu's lock file and log folder exist (a
// rule needs an existing path) and returns them.
func tpuRuntimePaths() []string {
	var out []string
	if f, err := os.OpenFile(tpuLockFile, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
		f.Close()
		out = append(out, tpuLockFile)
	}
	if os.MkdirAll(tpuLogDir, 0o755) == nil {
		out = append(out, tpuLogDir)
	}
	return out
}

// ruleset creates the Landlock ruleset of p: fd is -1 (and err nil) when
// the kernel has no Landlock. The caller closes fd.
func (p policy) ruleset() (fd int, flags uint32, err error) {
	roDirs, roFiles := splitPaths(p.ro)
	rwDirs, rwFiles := splitPaths(p.rw)
	devDirs, devFiles := splitPaths(p.devices)
	fd, flags, err = landlockConfig.NewRulesetFD(
		landlock.RODirs(roDirs...).IgnoreIfMissing(),
		landlock.ROFiles(roFiles...).IgnoreIfMissing(),
		landlock.RWDirs(rwDirs...).WithRefer().IgnoreIfMissing(),
		landlock.RWFiles(rwFiles...).IgnoreIfMissing(),
		landlock.RWDirs(devDirs...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWFiles(devFiles...).WithIoctlDev().IgnoreIfMissing(),
	)
	if err != nil {
		return -1, 0, fmt.Errorf("confine: %w", err)
	}
	return fd, flags, nil
}

// splitPaths sorts paths into directories and other files (a rule with
// directory rights on a file is invalid), following symlinks; missing
// paths and duplicates are dropped.
func splitPaths(paths []string) (dirs, files []string) {
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		fi, err := os.Stat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			dirs = append(dirs, p)
		default:
			files = append(files, p)
		}
	}
	return dirs, files
}

// restrictThread enforces the ruleset fd on the calling OS thread only;
// the caller has locked its goroutine to the thread and never unlocks it.
func restrictThread(fd int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine: no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("confine: landlock_restrict_self: %w", err)
	}
	return nil
}

// logConfinement says once, at start, how harnesses will be confined.
func logConfinement(log *slog.Logger, off bool) {
	abi := landlockABI()
	if off {
		log.Warn("probe: Landlock is off (--landlock=false): the harness is NOT confined to its folders (it can write wherever the scanner can); limits, environment scrubbing and process-group kill still apply")
		return
	}
	if abi <= 0 {
		log.Warn("probe: this kernel has no Landlock: the harness is NOT confined to its folders (it can write wherever the scanner can)")
		return
	}
	scoped := "; signals outside the run are refused"
	if abi < 6 {
		scoped = "; signals are not scoped (Landlock ABI < 6)"
	}
	log.Info(fmt.Sprintf("probe: harness confined by Landlock ABI %d: writes only to its run folder%s", abi, scoped))
}
