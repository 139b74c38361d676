package probe

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// inheritPrefixes are the accelerator variables a harness may inherit from
// the scanner's environment: TPU runtime (libtpu, PJRT, XLA) and CUDA
// device selection. Anything else is dropped.
var inheritPrefixes = []string{"TPU_", "PJRT_", "LIBTPU_", "XLA_", "TORCH_TPU_", "CUDA_", "NVIDIA_", "TORCHINDUCTOR_"}

// inheritNames are single variables a harness may inherit as they are.
var inheritNames = map[string]bool{
	"PATH":            true,
	"LD_LIBRARY_PATH": true, // CUDA and libtpu installs outside the venv
	"TZ":              true,
}

// pinnedNames are set by the runner itself; neither the parent environment
// nor ExtraEnv can change them.
var pinnedNames = map[string]bool{
	"HOME": true, "TMPDIR": true, "TMP": true, "TEMP": true,
	"HF_HUB_OFFLINE": true, "TRANSFORMERS_OFFLINE": true, "HF_HUB_DISABLE_TELEMETRY": true,
	"HF_DATASETS_OFFLINE": true, "PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true,
	"PYTHONNOUSERSITE": true, "PYTHONPATH": true, "PYTHONHOME": true, "PYTHONSTARTUP": true,
	"LD_PRELOAD": true, "TORCH_DEVICE_BACKEND_AUTOLOAD": true, probeMarkVar: true,
}

// testOnlyNames switch the harness to its test seam (harness_testing.py
// injects failures or simulates a TPU): they never reach a harness from the
// parent environment or ExtraEnv.
var testOnlyNames = map[string]bool{"HARNESS_TEST_INJECT": true}

// secretWords mark a variable as a credential. A variable whose name holds
// one of them never reaches the harness, whatever the allow-list says.
var secretWords = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION"}

// isSecretName reports whether an environment variable's name looks like it
// holds a credential (HF_TOKEN, AWS_SECRET_ACCESS_KEY, GITHUB_PAT_KEY, ...).
func isSecretName(name string) bool {
	up := strings.ToUpper(name)
	if up == "TOKENIZERS_PARALLELISM" {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// inherited reports whether the harness may inherit name from the parent.
func inherited(name string) bool {
	if inheritNames[name] {
		return true
	}
	for _, p := range inheritPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// defaultThreads is OMP_NUM_THREADS when neither the parent's allow-list nor
// ExtraEnv sets it: the CPU count, at most 8 (more threads rarely help a
// smoke test and several probes may share the host).
func defaultThreads() string {
	return strconv.Itoa(max(1, min(runtime.NumCPU(), 8)))
}

// scrubEnv builds the harness's environment: the pinned variables below,
// the allow-listed variables of parent (os.Environ() shape), then extra
// (operator additions, which may override inherited ones but not the pinned
// ones). Credentials (isSecretName) and the harness's test switches
// (testOnlyNames) are dropped from both; dropped lists
// the names of extra entries that were refused. preload, when set, is the
// one LD_PRELOAD the harness gets (tcmalloc, FindTCMalloc); the parent's
// never passes.
func scrubEnv(parent, extra []string, home, tmp, preload string) (env, dropped []string) {
	vars := map[string]string{}
	order := []string{}
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || isSecretName(k) || pinnedNames[k] || testOnlyNames[k] || !inherited(k) {
			continue
		}
		set(k, v)
	}
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || isSecretName(k) || pinnedNames[k] || testOnlyNames[k] {
			dropped = append(dropped, k)
			continue
		}
		set(k, v)
	}
	if vars["PATH"] == "" {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	if _, ok := vars["LANG"]; !ok {
		set("LANG", "C.UTF-8")
	}
	if _, ok := vars["LC_ALL"]; !ok {
		set("LC_ALL", "C.UTF-8")
	}
	if _, ok := vars["OMP_NUM_THREADS"]; !ok {
		set("OMP_NUM_THREADS", defaultThreads())
	}
	if _, ok := vars["TOKENIZERS_PARALLELISM"]; !ok {
		set("TOKENIZERS_PARALLELISM", "false")
	}
	pinned := [][2]string{
		{"HOME", home},
		{"TMPDIR", tmp},
		{"HF_HUB_OFFLINE", "1"},
		{"TRANSFORMERS_OFFLINE", "1"},
		{"HF_DATASETS_OFFLINE", "1"},
		{"HF_HUB_DISABLE_TELEMETRY", "1"},
		// The interpreter runs with -I -u -B, which ignores PYTHON*
		// variables; these are for any Python subprocess it starts.
		{"PYTHONUNBUFFERED", "1"},
		{"PYTHONDONTWRITEBYTECODE", "1"},
		{"PYTHONNOUSERSITE", "1"},
		// torch must not load device backends inside `import torch`
		// (torch/__init__.py _import_device_backends raises for any
		// failing "torch.backends" entry point): a torch_tpu that
		// cannot load would make every probe, cpu included, an
		// import_error. The harness loads torch_tpu itself, for tpu
		// and auto only, and sets the same value before importing
		// torch; pinning it here keeps it for a --harness replacement
		// and every Python process the harness starts.
		{"TORCH_DEVICE_BACKEND_AUTOLOAD", "0"},
	}
	if preload != "" {
		// torch_tpu warns that TorchTPU's host performance suffers under
		// glibc's allocator and asks for tcmalloc preloaded
		// (torch_tpu/_tcmalloc_check.py); the harness records whether it
		// is (Runtime.TCMalloc).
		pinned = append(pinned, [2]string{"LD_PRELOAD", preload})
	}
	for _, p := range pinned {
		set(p[0], p[1])
	}
	env = make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vars[k])
	}
	return env, dropped
}

// TCMallocPaths are where distributions install tcmalloc's shared library,
// most used first: Debian's and Ubuntu's libtcmalloc-minimal4 (the image
// installs it, deploy/Dockerfile) and libgoogle-perftools4, on x86_64 and
// arm64, then RPM distributions' gperftools-libs.
var TCMallocPaths = []string{
	"/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
	"/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
	"/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4",
	"/usr/lib/aarch64-linux-gnu/libtcmalloc.so.4",
	"/usr/lib64/libtcmalloc_minimal.so.4",
	"/usr/lib64/libtcmalloc.so.4",
}

// FindTCMalloc is the first of paths that is a regular file (links
// followed), "" when none is: the library the harness preloads.
func FindTCMalloc(paths []string) string {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
