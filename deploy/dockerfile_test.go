package deploy

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/probe"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	corev1 "k8s.io/api/core/v1"
)

const (
	dockerfile   = "Dockerfile"
	dockerignore = "Dockerfile.dockerignore" // BuildKit's per-Dockerfile ignore file
	repoRoot     = ".."                      // the build context
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line  int
	cmd   string // upper case: FROM, RUN, COPY, ...
	args  string
	stage int // index of its FROM; -1 before the first
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	f, err := os.Open(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start, stage := 0, -1
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{line: start, cmd: cmd, args: strings.TrimSpace(args), stage: stage})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.Len() > 0 {
		t.Fatalf("%s ends inside a continued instruction", dockerfile)
	}
	return out
}

// flagsAndWords splits an instruction's arguments into --flags and words.
func flagsAndWords(args string) (map[string]string, []string) {
	flags := map[string]string{}
	var words []string
	for _, f := range strings.Fields(args) {
		if v, ok := strings.CutPrefix(f, "--"); ok && len(words) == 0 {
			k, val, _ := strings.Cut(v, "=")
			flags[k] = val
			continue
		}
		words = append(words, f)
	}
	return flags, words
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	stages := map[string]int{}        // stage name → index
	globalArgs := map[string]string{} // ARG before the first FROM → default
	stageArgs := map[int]map[string]bool{}
	for _, in := range ins {
		flags, words := flagsAndWords(in.args)
		switch in.cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			if isSecretName(name) {
				t.Errorf("line %d: ARG %s: credentials go in a build secret, never an argument (it stays in the image's history)", in.line, name)
			}
			if in.stage < 0 {
				globalArgs[name] = def
			} else {
				if stageArgs[in.stage] == nil {
					stageArgs[in.stage] = map[string]bool{}
				}
				stageArgs[in.stage][name] = true
			}
		case "FROM":
			for _, m := range varRef.FindAllStringSubmatch(in.args, -1) {
				if _, ok := globalArgs[m[1]]; !ok {
					t.Errorf("line %d: FROM uses ${%s}, not declared before the first FROM", in.line, m[1])
				}
			}
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				stages[words[2]] = in.stage
			}
		case "COPY", "ADD":
			if from, ok := flags["from"]; ok {
				if idx, known := stages[from]; !known || idx >= in.stage {
					t.Errorf("line %d: COPY --from=%s names no earlier stage", in.line, from)
				}
				continue
			}
			checkContextSources(t, in, words[:len(words)-1])
		case "RUN", "ENV", "WORKDIR", "USER":
			assigned := shellAssignments(in.args)
			for _, m := range varRef.FindAllStringSubmatch(in.args, -1) {
				name := m[1]
				if !stageArgs[in.stage][name] && !assigned[name] && !envBefore(ins, in, name) {
					t.Errorf("line %d: ${%s} is neither an ARG of this stage, an ENV, nor set in the command", in.line, name)
				}
			}
		}
	}
	if v := globalArgs["GO_VERSION"]; v != goDirective(t) {
		t.Errorf("ARG GO_VERSION=%s, go.mod says go %s", v, goDirective(t))
	}
	checkImageStage(t, ins)
}

// shellAssignments are the names a RUN command sets itself (name=...).
func shellAssignments(cmd string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[\s;])([A-Za-z_][A-Za-z0-9_]*)=`).FindAllStringSubmatch(cmd, -1) {
		out[m[1]] = true
	}
	return out
}

func envBefore(ins []instruction, at instruction, name string) bool {
	for _, in := range ins {
		if in.stage == at.stage && in.line < at.line && in.cmd == "ENV" && strings.Contains(in.args, name+"=") {
			return true
		}
	}
	return false
}

func goDirective(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

func ignorePatterns(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(dockerignore)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return pm
}

// checkContextSources: what a COPY takes from the context exists and is not
// excluded by the ignore file.
func checkContextSources(t *testing.T, in instruction, sources []string) {
	pm := ignorePatterns(t)
	for _, src := range sources {
		p := filepath.Join(repoRoot, src)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("line %d: COPY %s: %v", in.line, src, err)
			continue
		}
		if excluded, err := pm.MatchesOrParentMatches(filepath.Clean(src)); err != nil || excluded {
			t.Errorf("line %d: COPY %s, which %s excludes (%v)", in.line, src, dockerignore, err)
		}
	}
}

// checkImageStage: the last stage runs the binary the build stage wrote,
// with the venv the pyenv stage made, as the user the pods run as.
func checkImageStage(t *testing.T, ins []instruction) {
	final := ins[len(ins)-1].stage
	var built, copiedBin, entry, user, pyenv string
	venvs := map[string]bool{}
	for _, in := range ins {
		flags, words := flagsAndWords(in.args)
		switch {
		case in.cmd == "RUN" && strings.Contains(in.args, "go build"):
			if m := regexp.MustCompile(`-o (\S+) (\./\S+)`).FindStringSubmatch(in.args); m != nil {
				built = m[1]
				if _, err := os.Stat(filepath.Join(repoRoot, m[2])); err != nil {
					t.Errorf("line %d: go build %s: %v", in.line, m[2], err)
				}
			}
		case in.cmd == "RUN" && strings.Contains(in.args, "-m venv"):
			if m := regexp.MustCompile(`-m venv (\S+)`).FindStringSubmatch(in.args); m != nil {
				venvs[m[1]] = true
			}
		case in.cmd == "COPY" && in.stage == final && flags["from"] == "build":
			if len(words) == 2 && words[0] == built {
				copiedBin = words[1]
			}
		case in.cmd == "COPY" && in.stage == final && flags["from"] == "pyenv":
			if len(words) == 2 && venvs[words[0]] && words[0] == words[1] {
				pyenv = words[1] // a venv is not relocatable: same path
			}
		case in.cmd == "ENTRYPOINT" && in.stage == final:
			entry = strings.Trim(strings.Split(strings.Trim(in.args, "[]"), ",")[0], `" `)
		case in.cmd == "USER" && in.stage == final:
			user = strings.Split(in.args, ":")[0]
		case in.cmd == "ENV" && in.stage == final:
			if m := regexp.MustCompile(`SCANNER_PYTHON=(\S+)`).FindStringSubmatch(in.args); m != nil && pyenv != "" &&
				m[1] != pyenv+"/bin/python" {
				t.Errorf("SCANNER_PYTHON=%s is not the copied venv's interpreter %s/bin/python", m[1], pyenv)
			}
		}
	}
	if built == "" || copiedBin == "" || entry != copiedBin {
		t.Errorf("the binary: built to %q, copied to %q, entrypoint %q", built, copiedBin, entry)
	}
	if pyenv == "" {
		t.Error("the final stage does not copy the harness's venv to the path it was made at")
	}
	if user == "" || user == "0" || user == "root" {
		t.Fatalf("the image runs as %q: want a numeric non-root user", user)
	}
	checkRunAsUser(t, user)
}

// checkRunAsUser: the pods run as the image's user, so that the files the
// image owns (its home) and the volumes (fsGroup) are theirs.
func checkRunAsUser(t *testing.T, uid string) {
	k := readKustomization(t)
	o := rawObjects(t, k)
	specs := map[string]corev1.PodSpec{}
	for _, s := range o.statefulSets {
		specs[s.Name] = s.Spec.Template.Spec
	}
	for _, d := range o.deployments {
		specs[d.Name] = d.Spec.Template.Spec
	}
	if len(specs) == 0 {
		t.Fatal("no workloads")
	}
	for name, spec := range specs {
		sc := spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || show(sc.RunAsUser) != uid || sc.FSGroup == nil || show(sc.FSGroup) != uid {
			t.Errorf("%s: runAsUser/fsGroup are not the image's user %s", name, uid)
		}
	}
}

// TestBuildContextBuilds copies what the ignore file lets into the build
// context, and the build stage's COPYs take from it, and builds the binary
// there, as the build stage does.
func TestBuildContextBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	pm := ignorePatterns(t)
	var copies []string
	for _, in := range parseDockerfile(t) {
		if flags, words := flagsAndWords(in.args); in.cmd == "COPY" && flags["from"] == "" && in.stage == 0 {
			copies = append(copies, words[:len(words)-1]...)
		}
	}
	ctxDir := t.TempDir()
	n := 0
	for _, src := range copies {
		err := filepath.WalkDir(filepath.Join(repoRoot, src), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, p)
			if excluded, _ := pm.MatchesOrParentMatches(rel); excluded {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(ctxDir, rel), 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			return os.WriteFile(filepath.Join(ctxDir, rel), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 10 || !slices.Contains(copies, "go.mod") {
		t.Fatalf("the build context has %d files from %v", n, copies)
	}
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(t.TempDir(), "scanner"), "./cmd/scanner")
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in the Docker build context: %v\n%s", err, out)
	}
}

// TestDockerfileInstallsTorchTPUFromPyPIAndTCMalloc: the harness's
// environment gets Google's TorchTPU the way every environment does, from
// requirements.txt through PyPI (no private index, no credentials), checked
// by importing it; the torch pin rule is written down; and the image
// installs the tcmalloc the runner preloads, at a path it looks at.
func TestDockerfileInstallsTorchTPUFromPyPIAndTCMalloc(t *testing.T) {
	ins := parseDockerfile(t)
	final := ins[len(ins)-1].stage
	var fromPyPI, imports, tcmalloc bool
	for _, in := range ins {
		switch {
		case in.cmd == "RUN" && strings.Contains(in.args, "pip install") && strings.Contains(in.args, "-r /tmp/requirements.txt"):
			fromPyPI = strings.Contains(in.args, "https://pypi.org/simple")
		case in.cmd == "RUN" && strings.Contains(in.args, "__import__('torch_tpu')"):
			imports = strings.Contains(in.args, "TORCH_DEVICE_BACKEND_AUTOLOAD=0")
		case in.cmd == "RUN" && in.stage == final && strings.Contains(in.args, "apt-get install"):
			tcmalloc = tcmalloc || strings.Contains(in.args, "libtcmalloc-minimal4")
		}
		if in.cmd == "ARG" || in.cmd == "RUN" {
			for _, private := range []string{"TORCH_TPU_INDEX_URL", "pkg.dev", "oauth2accesstoken", "type=secret"} {
				if strings.Contains(in.args, private) {
					t.Errorf("line %d: %s: torch-tpu is on PyPI, no private index or credentials are needed", in.line, private)
				}
			}
		}
	}
	if !fromPyPI || !imports || !tcmalloc {
		t.Errorf("requirements from PyPI %v, torch_tpu imported without autoload %v, tcmalloc installed in the image %v",
			fromPyPI, imports, tcmalloc)
	}
	req, err := os.ReadFile(filepath.Join(repoRoot, "internal", "harness", "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pin := range []string{"torch-tpu==", "libtpu=="} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pin) + `\S+ ; sys_platform == "linux" and platform_machine == "x86_64"`).Match(req) {
			t.Errorf("requirements.txt has no %s pin for Linux x86_64", pin)
		}
	}
	doc, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "torch-tpu's Requires-Dist decides") {
		t.Error("the Dockerfile does not state the torch pin rule (torch-tpu's Requires-Dist decides)")
	}
	// Debian's libtcmalloc-minimal4 on amd64, where the runner looks first
	const deb = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
	if !slices.Contains(probe.TCMallocPaths, deb) {
		t.Errorf("probe.TCMallocPaths %v lacks %s, where the image's libtcmalloc-minimal4 puts it", probe.TCMallocPaths, deb)
	}
}
