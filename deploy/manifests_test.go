package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/google-pytorch/torchtpu-scanner/internal/config"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
)

const (
	kustomizeDir  = "kubernetes"
	secretExample = "kubernetes/secret.example.yaml"
	tpuResource   = corev1.ResourceName("google.com/tpu")
	labelTPUAccel = "cloud.google.com/gke-tpu-accelerator"
	labelTPUTopo  = "cloud.google.com/gke-tpu-topology"
)

// singleHostTPUs is GKE's single-host TPU slices: accelerator label value →
// topology label value → chips on the one TPU VM (GKE's "Plan TPUs"
// reference tables). One worker runs per VM, with --devices = its chips.
var singleHostTPUs = map[string]map[string]int64{
	"tpu-v5-lite-podslice": {"1x1": 1, "2x2": 4, "2x4": 8}, // v5e, ct5lp-hightpu-{1,4,8}t
	"tpu-v5p-slice":        {"2x2x1": 4},                   // v5p, ct5p-hightpu-4t
	"tpu-v6e-slice":        {"1x1": 1, "2x2": 4, "2x4": 8}, // v6e, ct6e-standard-{1,4,8}t
	"tpu7x":                {"2x2x1": 4},                   // Ironwood, tpu7x-standard-4t
}

// kustomization is the part of kustomize's Kustomization this base uses;
// decoded strictly, so a field it does not know is an error here too
// (kubectl kustomize, where present, checks the file for real).
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// objects are the decoded manifests, by kind.
type objects struct {
	source       string // where they came from, for messages
	namespaces   []corev1.Namespace
	services     []corev1.Service
	secrets      []corev1.Secret
	statefulSets []appsv1.StatefulSet
	deployments  []appsv1.Deployment
}

// decodeStrict decodes one YAML document into the Kubernetes type its
// apiVersion and kind name; unknown or duplicate fields are errors.
func (o *objects) decodeStrict(doc []byte) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		o.namespaces, err = decodeInto(doc, o.namespaces)
	case "v1 Service":
		o.services, err = decodeInto(doc, o.services)
	case "v1 Secret":
		o.secrets, err = decodeInto(doc, o.secrets)
	case "apps/v1 StatefulSet":
		o.statefulSets, err = decodeInto(doc, o.statefulSets)
	case "apps/v1 Deployment":
		o.deployments, err = decodeInto(doc, o.deployments)
	default:
		return fmt.Errorf("unexpected kind %q %q: teach this test its type", tm.APIVersion, tm.Kind)
	}
	return err
}

func decodeInto[T any](doc []byte, into []T) ([]T, error) {
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return into, err
	}
	return append(into, v), nil
}

// splitDocs splits a multi-document YAML stream, dropping empty documents.
func splitDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kustomizeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: apiVersion %q kind %q", k.APIVersion, k.Kind)
	}
	return k
}

// rawObjects decodes the files the kustomization lists, as written.
func rawObjects(t *testing.T, k kustomization) objects {
	t.Helper()
	o := objects{source: "the files of " + kustomizeDir}
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(kustomizeDir, r))
		if err != nil {
			t.Fatalf("kustomization resource %s: %v", r, err)
		}
		docs := splitDocs(b)
		if len(docs) == 0 {
			t.Fatalf("%s: no documents", r)
		}
		for i, d := range docs {
			if err := o.decodeStrict(d); err != nil {
				t.Errorf("%s document %d: %v", r, i+1, err)
			}
		}
	}
	return o
}

// renderedObjects renders the kustomization with kubectl, as `kubectl apply
// -k` would; ok is false where kubectl is not installed.
func renderedObjects(t *testing.T) (objects, bool) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return objects{}, false
	}
	cmd := exec.Command(kubectl, "kustomize", kustomizeDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", kustomizeDir, err, stderr.String())
	}
	o := objects{source: "kubectl kustomize " + kustomizeDir}
	for i, d := range splitDocs(out) {
		if err := o.decodeStrict(d); err != nil {
			t.Errorf("rendered document %d: %v", i+1, err)
		}
	}
	return o, true
}

func secretExampleObject(t *testing.T) corev1.Secret {
	t.Helper()
	b, err := os.ReadFile(secretExample)
	if err != nil {
		t.Fatal(err)
	}
	var o objects
	for _, d := range splitDocs(b) {
		if err := o.decodeStrict(d); err != nil {
			t.Fatalf("%s: %v", secretExample, err)
		}
	}
	if len(o.secrets) != 1 || len(o.namespaces)+len(o.services)+len(o.statefulSets)+len(o.deployments) != 0 {
		t.Fatalf("%s: want exactly one Secret", secretExample)
	}
	return o.secrets[0]
}

// TestManifests decodes every manifest strictly and checks the wiring, on
// the files as written and, where kubectl exists, on what it renders.
func TestManifests(t *testing.T) {
	k := readKustomization(t)
	secret := secretExampleObject(t)
	for _, r := range k.Resources {
		if filepath.Base(r) == filepath.Base(secretExample) {
			t.Errorf("the secret example is a kustomization resource: real tokens must never be committed")
		}
	}
	sets := []objects{rawObjects(t, k)}
	if rendered, ok := renderedObjects(t); ok {
		sets = append(sets, rendered)
	} else {
		t.Log("kubectl not found: checked the files as written, not the kustomize rendering")
	}
	for _, o := range sets {
		t.Run(o.source, func(t *testing.T) {
			w := wiringOf(t, o)
			checkSecret(t, k, secret, w)
			checkServer(t, w)
			checkService(t, w)
			checkWorkers(t, w)
			checkImages(t, k, o, w)
			checkFlags(t, w)
		})
	}
}

// wiring is the one server and the one worker pool of a set of objects.
type wiring struct {
	objects
	server    appsv1.StatefulSet
	serverCtr corev1.Container
	workers   appsv1.Deployment
	workerCtr corev1.Container
	service   corev1.Service
}

func wiringOf(t *testing.T, o objects) wiring {
	t.Helper()
	if len(o.statefulSets) != 1 || len(o.deployments) != 1 || len(o.services) != 1 || len(o.namespaces) != 1 {
		t.Fatalf("want one StatefulSet, Deployment, Service and Namespace; got %d, %d, %d, %d",
			len(o.statefulSets), len(o.deployments), len(o.services), len(o.namespaces))
	}
	if len(o.secrets) != 0 {
		t.Fatalf("a Secret is part of the kustomization: tokens must not be committed")
	}
	w := wiring{objects: o, server: o.statefulSets[0], workers: o.deployments[0], service: o.services[0]}
	w.serverCtr = onlyContainer(t, "server", w.server.Spec.Template.Spec)
	w.workerCtr = onlyContainer(t, "worker", w.workers.Spec.Template.Spec)
	return w
}

func onlyContainer(t *testing.T, what string, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%s: want exactly one container, got %d (+%d init)", what, len(spec.Containers), len(spec.InitContainers))
	}
	return spec.Containers[0]
}

// flagValue returns --name=value (or --name value) from a container's args.
func flagValue(c corev1.Container, name string) (string, bool) {
	args := append(slices.Clone(c.Command), c.Args...)
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func mustFlag(t *testing.T, what string, c corev1.Container, name string) string {
	t.Helper()
	v, ok := flagValue(c, name)
	if !ok {
		t.Fatalf("%s: no --%s in args %q", what, name, c.Args)
	}
	return v
}

// checkSecret: every secretKeyRef names the tokens Secret and a key it
// has; the server and every worker read the worker token from the same
// key, and the admin token from another.
func checkSecret(t *testing.T, k kustomization, s corev1.Secret, w wiring) {
	if s.Namespace != k.Namespace || s.Namespace != w.namespaces[0].Name {
		t.Errorf("secret example namespace %q, kustomization %q, Namespace %q", s.Namespace, k.Namespace, w.namespaces[0].Name)
	}
	keys := map[string]bool{}
	for key := range s.StringData {
		keys[key] = true
	}
	for key := range s.Data {
		keys[key] = true
	}
	refs := map[string]map[string]string{} // container → env name → key
	for _, c := range []corev1.Container{w.serverCtr, w.workerCtr} {
		refs[c.Name] = map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				if isSecretName(e.Name) && e.Value != "" {
					t.Errorf("%s: %s has a literal value in the manifest", c.Name, e.Name)
				}
				continue
			}
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != s.Name {
				t.Errorf("%s: %s reads Secret %q, the tokens are in %q", c.Name, e.Name, ref.Name, s.Name)
			}
			if !keys[ref.Key] {
				t.Errorf("%s: %s reads key %q, which the Secret does not have (keys %v)", c.Name, e.Name, ref.Key, keys)
			}
			refs[c.Name][e.Name] = ref.Key
		}
		if len(c.EnvFrom) > 0 {
			t.Errorf("%s: envFrom would expose every key of a source; name each variable", c.Name)
		}
	}
	srv, wrk := refs[w.serverCtr.Name], refs[w.workerCtr.Name]
	switch {
	case srv["SCANNER_WORKER_TOKEN"] == "" || srv["SCANNER_WORKER_TOKEN"] != wrk["SCANNER_WORKER_TOKEN"]:
		t.Errorf("worker token: server reads key %q, workers %q", srv["SCANNER_WORKER_TOKEN"], wrk["SCANNER_WORKER_TOKEN"])
	case srv["SCANNER_ADMIN_TOKEN"] == "" || srv["SCANNER_ADMIN_TOKEN"] == srv["SCANNER_WORKER_TOKEN"]:
		t.Errorf("admin token: server reads key %q (the worker token is %q): it needs a key of its own",
			srv["SCANNER_ADMIN_TOKEN"], srv["SCANNER_WORKER_TOKEN"])
	case wrk["SCANNER_ADMIN_TOKEN"] != "":
		t.Errorf("workers read the admin token: they must hold only the worker token")
	}
	for _, v := range s.StringData {
		if len(v) >= 32 && !strings.Contains(strings.ToLower(v), "replace") {
			t.Errorf("secret example holds what looks like a real token (%d characters)", len(v))
		}
	}
}

// show prints an optional number: its value, or "unset".
func show[T int32 | int64](p *T) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(int64(*p), 10)
}

func isSecretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "TOKEN") || strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

// checkServer: one replica on its own volume, the database on it, probes
// on the container's ports.
func checkServer(t *testing.T, w wiring) {
	s, c := w.server, w.serverCtr
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
		t.Errorf("server replicas = %s: SQLite has one writer", show(s.Spec.Replicas))
	}
	if s.Spec.ServiceName != w.service.Name {
		t.Errorf("server serviceName %q, the Service is %q", s.Spec.ServiceName, w.service.Name)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("server args %q: want scanner serve", c.Args)
	}
	if d := mustFlag(t, "server", c, "dispatch"); d != "workers" {
		t.Errorf("server --dispatch=%s: want workers", d)
	}
	if len(s.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("server: want one volumeClaimTemplate, got %d", len(s.Spec.VolumeClaimTemplates))
	}
	pvc := s.Spec.VolumeClaimTemplates[0]
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOnce) {
		t.Errorf("server volume access modes %v: want ReadWriteOnce", pvc.Spec.AccessModes)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) < 0 {
		t.Errorf("server volume of %s", q.String())
	}
	db := mustFlag(t, "server", c, "db")
	if m, ok := mountFor(c, db); !ok || m.Name != pvc.Name {
		t.Errorf("server --db=%s is not on the claimed volume %q (mount %+v)", db, pvc.Name, m)
	}
	checkWritable(t, "server", c, w.server.Spec.Template.Spec, s.Spec.VolumeClaimTemplates, mustFlag(t, "server", c, "cache-dir"))
	checkProbes(t, "server", c, true)
	if _, port, err := net.SplitHostPort(mustFlag(t, "server", c, "addr")); err != nil || !hasContainerPort(c, port) {
		t.Errorf("server --addr is not a container port (%v)", err)
	}
	if g := s.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		t.Errorf("server terminationGracePeriodSeconds = %s: it needs time to record the scan and close the database", show(g))
	}
}

// checkService: it selects the server's pods (not the workers'), and its
// ports reach the server's container ports.
func checkService(t *testing.T, w wiring) {
	sel := w.service.Spec.Selector
	if len(sel) == 0 {
		t.Fatal("the Service has no selector")
	}
	if !selects(sel, w.server.Spec.Template.Labels) {
		t.Errorf("Service selector %v does not select the server's pods %v", sel, w.server.Spec.Template.Labels)
	}
	if selects(sel, w.workers.Spec.Template.Labels) {
		t.Errorf("Service selector %v also selects the workers", sel)
	}
	if !selects(w.server.Spec.Selector.MatchLabels, w.server.Spec.Template.Labels) ||
		!selects(w.workers.Spec.Selector.MatchLabels, w.workers.Spec.Template.Labels) {
		t.Error("a workload's selector does not match its own pod template")
	}
	if selects(w.server.Spec.Selector.MatchLabels, w.workers.Spec.Template.Labels) ||
		selects(w.workers.Spec.Selector.MatchLabels, w.server.Spec.Template.Labels) {
		t.Error("the server's and the workers' selectors overlap")
	}
	if len(w.service.Spec.Ports) == 0 {
		t.Fatal("the Service has no ports")
	}
	for _, p := range w.service.Spec.Ports {
		if !targetsPort(w.serverCtr, p.TargetPort, p.Port) {
			t.Errorf("Service port %d targets %s, which is no port of the server container", p.Port, p.TargetPort.String())
		}
	}
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func targetsPort(c corev1.Container, target intstr.IntOrString, servicePort int32) bool {
	for _, cp := range c.Ports {
		switch {
		case target.Type == intstr.String && target.StrVal != "" && cp.Name == target.StrVal:
			return true
		case target.Type == intstr.Int && target.IntVal != 0 && cp.ContainerPort == target.IntVal:
			return true
		case target.Type == intstr.Int && target.IntVal == 0 && cp.ContainerPort == servicePort:
			return true // no targetPort: the Service port itself
		}
	}
	return false
}

func hasContainerPort(c corev1.Container, port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == n })
}

// checkProbes: every HTTP probe hits a port of the container.
func checkProbes(t *testing.T, what string, c corev1.Container, wantReadiness bool) {
	if c.LivenessProbe == nil || (wantReadiness && c.ReadinessProbe == nil) {
		t.Errorf("%s: liveness %v, readiness %v", what, c.LivenessProbe != nil, c.ReadinessProbe != nil)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet == nil {
			t.Errorf("%s %s probe is not an HTTP probe", what, name)
			continue
		}
		if !targetsPort(c, p.HTTPGet.Port, -1) {
			t.Errorf("%s %s probe port %s is no port of the container", what, name, p.HTTPGet.Port.String())
		}
		if !slices.Contains([]string{"/healthz", "/readyz"}, p.HTTPGet.Path) {
			t.Errorf("%s %s probe path %q", what, name, p.HTTPGet.Path)
		}
	}
}

func mountFor(c corev1.Container, p string) (corev1.VolumeMount, bool) {
	var best corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if (p == m.MountPath || strings.HasPrefix(path.Clean(p), strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(best.MountPath) {
			best = m
		}
	}
	return best, best.Name != ""
}

// checkWritable: with a read-only root file system, what the process
// writes (the given paths, and /tmp) is on a volume.
func checkWritable(t *testing.T, what string, c corev1.Container, spec corev1.PodSpec, claims []corev1.PersistentVolumeClaim, paths ...string) {
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: want a read-only root file system and no privilege escalation", what)
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: want runAsNonRoot", what)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, pvc := range claims {
		volumes[pvc.Name] = true
	}
	for _, p := range append(paths, "/tmp/x") {
		m, ok := mountFor(c, p)
		if !ok {
			t.Errorf("%s writes %s, which is on no volume", what, p)
			continue
		}
		if m.ReadOnly {
			t.Errorf("%s writes %s, on the read-only mount %s", what, p, m.MountPath)
		}
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("%s mounts %q, which is no volume of the pod", what, m.Name)
		}
	}
}

// checkWorkers: one worker per single-host TPU VM, all its chips, --devices
// equal to them, the server URL naming the Service, and a grace period that
// covers the worker's shutdown.
func checkWorkers(t *testing.T, w wiring) {
	spec, c := w.workers.Spec.Template.Spec, w.workerCtr
	if len(c.Args) == 0 || c.Args[0] != "worker" {
		t.Errorf("worker args %q: want scanner worker", c.Args)
	}
	accel, topo := spec.NodeSelector[labelTPUAccel], spec.NodeSelector[labelTPUTopo]
	chips, ok := singleHostTPUs[accel][topo]
	if !ok {
		t.Fatalf("worker nodeSelector %s=%q %s=%q is not a single-host TPU slice GKE knows", labelTPUAccel, accel, labelTPUTopo, topo)
	}
	limit, req := c.Resources.Limits[tpuResource], c.Resources.Requests[tpuResource]
	if limit.Value() != chips || (!req.IsZero() && req.Cmp(limit) != 0) {
		t.Errorf("worker %s limit %s (request %s): the %s VM has %d chips", tpuResource, limit.String(), req.String(), topo, chips)
	}
	devices, err := strconv.ParseInt(mustFlag(t, "worker", c, "devices"), 10, 64)
	if err != nil || devices != chips {
		t.Errorf("worker --devices=%d (%v): want the VM's %d chips", devices, err, chips)
	}
	if target := mustFlag(t, "worker", c, "target"); target != "tpu" {
		t.Errorf("worker --target=%s on a TPU node pool", target)
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == string(tpuResource) }) {
		t.Errorf("worker: no toleration of the TPU nodes' %s taint", tpuResource)
	}
	checkServerURL(t, w, mustFlag(t, "worker", c, "server"))

	grace, err := time.ParseDuration(mustFlag(t, "worker", c, "probe-grace"))
	if err != nil {
		t.Fatalf("worker --probe-grace: %v", err)
	}
	g := spec.TerminationGracePeriodSeconds
	if g == nil || time.Duration(*g)*time.Second <= fleet.ShutdownBudget(grace) {
		t.Errorf("worker terminationGracePeriodSeconds = %s: the worker needs up to %v after SIGTERM (--probe-grace=%v)",
			show(g), fleet.ShutdownBudget(grace), grace)
	}
	checkWritable(t, "worker", c, spec, nil, mustFlag(t, "worker", c, "cache-dir"))
	checkProbes(t, "worker", c, false)
	if _, port, err := net.SplitHostPort(mustFlag(t, "worker", c, "addr")); err != nil || !hasContainerPort(c, port) {
		t.Errorf("worker --addr is not a container port (%v)", err)
	}
	if w.workers.Spec.Strategy.RollingUpdate != nil && w.workers.Spec.Strategy.RollingUpdate.MaxSurge != nil &&
		w.workers.Spec.Strategy.RollingUpdate.MaxSurge.IntValue() != 0 {
		t.Errorf("worker rollout surges: a surge pod waits for a TPU VM nobody frees")
	}
}

// checkServerURL: the worker's --server is http://SERVICE[.NAMESPACE[.svc[.cluster.local]]]:PORT.
func checkServerURL(t *testing.T, w wiring, raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Path != "" && u.Path != "/" {
		t.Fatalf("worker --server=%q: want http://SERVICE:PORT (%v)", raw, err)
	}
	host, port := u.Hostname(), u.Port()
	names := []string{w.service.Name}
	ns := w.service.Namespace
	if ns == "" {
		ns = w.namespaces[0].Name
	}
	for _, suffix := range []string{"", ".svc", ".svc.cluster.local"} {
		names = append(names, w.service.Name+"."+ns+suffix)
	}
	if !slices.Contains(names, host) {
		t.Errorf("worker --server host %q names no Service (want one of %v)", host, names)
	}
	if port == "" {
		port = "80"
	}
	if !slices.ContainsFunc(w.service.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port }) {
		t.Errorf("worker --server port %s is no port of Service %s", port, w.service.Name)
	}
}

// checkImages: both workloads run the one image the kustomization names.
func checkImages(t *testing.T, k kustomization, o objects, w wiring) {
	if len(k.Images) != 1 {
		t.Fatalf("kustomization images: want one, got %d", len(k.Images))
	}
	img := k.Images[0]
	want := img.Name
	if strings.HasPrefix(o.source, "kubectl") {
		want = img.NewName + ":" + img.NewTag
	}
	for _, c := range []corev1.Container{w.serverCtr, w.workerCtr} {
		if c.Image != want {
			t.Errorf("%s image %q, want %q", c.Name, c.Image, want)
		}
	}
}

// checkFlags: each container's arguments are a command the scanner takes,
// with flags it accepts and values it validates, given the environment
// the manifest sets (secrets with placeholder values).
func checkFlags(t *testing.T, w wiring) {
	for _, c := range []corev1.Container{w.serverCtr, w.workerCtr} {
		if len(c.Command) != 0 {
			t.Errorf("%s overrides the image's entrypoint: %q", c.Name, c.Command)
		}
		env := map[string]string{"HOME": "/home/scanner"}
		for _, e := range c.Env {
			env[e.Name] = e.Value
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				env[e.Name] = "secret-" + e.ValueFrom.SecretKeyRef.Key
			}
		}
		lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		cmd := config.Command(c.Args[0])
		cfg, rest, err := config.Parse(cmd, c.Args[1:], lookup, io.Discard)
		if err != nil || len(rest) != 0 {
			t.Errorf("%s: scanner %s %q: %v (left over: %q)", c.Name, cmd, c.Args[1:], err, rest)
			continue
		}
		if cmd == config.CmdWorker && cfg.WorkerToken == "" || cmd == config.CmdServe && cfg.Dispatch != config.DispatchWorkers {
			t.Errorf("%s: %+v", c.Name, cfg)
		}
	}
}

// TestSingleHostTable guards the test's own table: a topology's chips are
// the product of its dimensions.
func TestSingleHostTable(t *testing.T) {
	n := 0
	for accel, topos := range singleHostTPUs {
		for topo, chips := range topos {
			prod := int64(1)
			for _, d := range strings.Split(topo, "x") {
				v, err := strconv.ParseInt(d, 10, 64)
				if err != nil {
					t.Fatalf("%s %s: %v", accel, topo, err)
				}
				prod *= v
			}
			if prod != chips {
				t.Errorf("%s %s: %d chips, the topology has %d", accel, topo, chips, prod)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("empty table")
	}
}

// The strict decoder must refuse what a lenient one would let through, or
// the test above proves nothing.
func TestDecodeStrictRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  selectr:\n    a: b\n",
		"duplicate field": "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  name: t\n",
		"wrong type":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: two\n",
		"unknown kind":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
	} {
		var o objects
		if err := o.decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var o objects
	if err := o.decodeStrict([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")); err != nil || len(o.services) != 1 {
		t.Errorf("a valid Service: %v", err)
	}
}

// TestWorkersCommentedServingFlag: the serving probe's flag the worker
// manifest offers in a comment (for an image with vLLM-TorchTPU) is one
// `scanner worker` takes, beside the manifest's own arguments.
func TestWorkersCommentedServingFlag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(kustomizeDir, "workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var flag string
	for _, l := range strings.Split(string(data), "\n") {
		if f, ok := strings.CutPrefix(strings.TrimSpace(l), "# - --vllm-python="); ok {
			flag = "--vllm-python=" + f
		}
	}
	if flag == "" {
		t.Fatal("workers.yaml offers no --vllm-python line")
	}
	env := func(k string) (string, bool) {
		if k == "SCANNER_WORKER_TOKEN" {
			return "token", true
		}
		return "", false
	}
	cfg, rest, err := config.Parse(config.CmdWorker, []string{"--server=http://scanner:8080", "--target=tpu", flag}, env, io.Discard)
	if err != nil || len(rest) != 0 || cfg.VLLMPython != strings.TrimPrefix(flag, "--vllm-python=") {
		t.Errorf("scanner worker %s: %v (left over %q, vllm python %q)", flag, err, rest, cfg.VLLMPython)
	}
}
