package probe

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeTree writes files (path relative to root → content) under a new
// root and returns it.
func fakeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestMemoryLimitFollowsTheCgroup: the budget's memory is the smaller of
// MemTotal and the process's cgroup limit (issue 22: a pod's limit below
// the host's memory), for cgroup v2 and v1, with "no limit" spelt as each
// spells it.
func TestMemoryLimitFollowsTheCgroup(t *testing.T) {
	const gib = uint64(1) << 30
	meminfo := "MemTotal:       33554432 kB\nMemFree:        1000 kB\n" // 32 GiB
	v1 := "12:pids:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n3:memory:/kubepods/pod1/c1\n0::/\n"
	cases := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"no cgroup files", map[string]string{}, 32 * gib},
		{"v2 namespace root with a limit", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "8589934592\n"}, 8 * gib},
		{"v2 unlimited", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}, 32 * gib},
		{"v2 limit above the host's memory", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "68719476736\n"}, 32 * gib},
		{"v2 nested: the pod's limit bounds its container", map[string]string{
			"proc/self/cgroup":                              "0::/kubepods/pod1/c1\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max":     "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":        "4294967296\n",
			"sys/fs/cgroup/kubepods/memory.max":             "17179869184\n",
			"sys/fs/cgroup/kubepods/pod1/c1/memory.current": "1\n"}, 4 * gib},
		{"v1 with a limit", map[string]string{
			"proc/self/cgroup": v1, "sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "6442450944\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 6 * gib},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup": v1, "sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "9223372036854771712\n"}, 32 * gib},
		{"v1 bind-mounted container: its own cgroup is the mount's root", map[string]string{
			"proc/self/cgroup": v1, "sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n"}, 2 * gib},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"proc/meminfo": meminfo}
			for k, v := range tc.files {
				files[k] = v
			}
			got, err := memoryLimit(fakeTree(t, files))
			if err != nil || got != tc.want {
				t.Errorf("memoryLimit = %d GiB (%d), %v; want %d GiB", got/gib, got, err, tc.want/gib)
			}
		})
	}
	if _, err := memoryLimit(fakeTree(t, map[string]string{"proc/meminfo": "MemFree: 1 kB\n"})); err == nil {
		t.Error("no MemTotal: no error")
	}
	if got, err := PhysicalMemory(); err != nil || got == 0 {
		t.Errorf("PhysicalMemory() = %d, %v", got, err)
	}
}

// TestTCMallocIsPreloadedWhereInstalled: the first installed library of
// the list is found, and it is the harness's one LD_PRELOAD (the parent's
// never passes).
func TestTCMallocIsPreloadedWhereInstalled(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libtcmalloc_minimal.so.4")
	if err := os.WriteFile(lib, []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "libtcmalloc.so.4")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nothing.so")
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{nil, ""},
		{[]string{missing}, ""},
		{[]string{dir}, ""}, // a folder is not a library
		{[]string{missing, lib}, lib},
		{[]string{link, lib}, link},
	} {
		if got := FindTCMalloc(tc.paths); got != tc.want {
			t.Errorf("FindTCMalloc(%v) = %q, want %q", tc.paths, got, tc.want)
		}
	}
	parent := []string{"LD_PRELOAD=/evil.so", "PATH=/usr/bin"}
	env, _ := scrubEnv(parent, []string{"LD_PRELOAD=/other.so"}, "/h", "/t", lib)
	if pre := envValues(env, "LD_PRELOAD"); !slices.Equal(pre, []string{lib}) {
		t.Errorf("LD_PRELOAD %v, want only %s", pre, lib)
	}
	env, _ = scrubEnv(parent, nil, "/h", "/t", "")
	if pre := envValues(env, "LD_PRELOAD"); len(pre) != 0 {
		t.Errorf("LD_PRELOAD %v without tcmalloc", pre)
	}
}

func envValues(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			out = append(out, v)
		}
	}
	return out
}
