package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/hub/hubtest"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// inNetns is set (to 1) in the copy of this test binary that runs in a
// network namespace of its own.
const inNetns = "SCANNER_TEST_IN_NETNS"

// The addresses the namespace's loopback gets: one IPv6 /64 that the
// server and eight clients share, and a client of another /64. They exist
// in the test's own namespace only.
var (
	netnsServer  = "2001:db8:1:2::1"
	netnsClients = []string{"2001:db8:1:2::a", "2001:db8:1:2::b", "2001:db8:1:2::c", "2001:db8:1:2::d",
		"2001:db8:1:2:ffff::e", "2001:db8:1:2:ffff::f", "2001:db8:1:2:1234:5678:9abc:def0", "2001:db8:1:2::1:1"}
	netnsOther = "2001:db8:1:3::1"
	// The test requests' part asks from a /64 of its own (every request
	// is an API request too, and the first part empties the first /64's
	// bucket).
	netnsAskers = []string{"2001:db8:1:4::a", "2001:db8:1:4::b", "2001:db8:1:4::c", "2001:db8:1:4:ffff::d", "2001:db8:1:4:1::e", "2001:db8:1:4::f"}
)

// netnsPrefix is the command prefix that runs a command in a new network
// namespace (unshare -n, and -r where this is not root), or nil where no
// such namespace can be had or `ip` cannot set one up.
func netnsPrefix() []string {
	flags := []string{"-n"}
	if os.Geteuid() != 0 {
		flags = append(flags, "-r")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil
	}
	if err := exec.Command("unshare", append(flags, "ip", "link", "set", "lo", "up")...).Run(); err != nil {
		return nil
	}
	return append([]string{"unshare"}, flags...)
}

// TestPerClientLimitsCountAnIPv6Slash64InANetworkNamespace runs the real
// server in a network namespace of the test's own, whose loopback holds
// several addresses of one IPv6 /64, and asks from each of them: they are
// one client for the API's rate limit and for the test requests' hourly
// share; an address of another /64, and each IPv4 address (reaching the
// dual-stack listener as an IPv4-mapped address), are clients of their own.
func TestPerClientLimitsCountAnIPv6Slash64InANetworkNamespace(t *testing.T) {
	if os.Getenv(inNetns) == "1" {
		perClientLimitsInNetns(t)
		return
	}
	prefix := netnsPrefix()
	if prefix == nil {
		testenv.Missing(t, "no network namespace of the test's own (unshare -n, util-linux, and ip, iproute2, are needed; as a user, unprivileged user namespaces too)")
	}
	name := "^" + t.Name() + "$"
	cmd := exec.Command(prefix[0], append(prefix[1:], os.Args[0], "-test.run="+name, "-test.v", "-test.count=1", "-test.timeout=150s")...)
	cmd.Env = append(os.Environ(), inNetns+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("in the namespace: %v\n%s", err, lastLines(string(out), 60))
	}
}

// perClientLimitsInNetns is the test, in its namespace.
func perClientLimitsInNetns(t *testing.T) {
	var batch strings.Builder
	batch.WriteString("link set lo up\n")
	for _, a := range append(append(append([]string{netnsServer}, netnsClients...), netnsAskers...), netnsOther) {
		fmt.Fprintf(&batch, "addr add %s/64 dev lo nodad\n", a)
	}
	ip := exec.Command("ip", "-batch", "-")
	ip.Stdin = strings.NewReader(batch.String())
	if out, err := ip.CombinedOutput(); err != nil {
		t.Fatalf("setting up the namespace's addresses: %v\n%s", err, out)
	}
	ids := []string{"ns/m-0", "ns/m-1", "ns/m-2", "ns/m-3", "ns/m-4", "ns/m-5", "ns/m-6", "ns/m-7"}
	h := hubtest.New(t, llamaRepos(ids...)...)
	dir := t.TempDir()
	cmd, out := fleetProcess(t, nil, "serve", "--no-schedule", "--addr", ":0", "--db", filepath.Join(dir, "scanner.db"),
		"--cache-dir", filepath.Join(dir, "hub"), "--hub-endpoint", h.URL(), "--log-format", "json",
		"--rate-limit", "1", "--request-rate", "3")
	base, err := url.Parse(servingAt(t, out))
	if err != nil {
		t.Fatal(err)
	}
	port := base.Port()
	from := func(src string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	to := func(src string) string { // the server's address of src's family
		if strings.Contains(src, ":") {
			return "http://" + net.JoinHostPort(netnsServer, port)
		}
		return "http://" + net.JoinHostPort("127.0.0.1", port)
	}
	do := func(src, method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, to(src)+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := from(src).Do(req)
		if err != nil {
			t.Fatalf("from %s: %v", src, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// The API: a bucket of 120 (the default burst), refilled at 1 a
	// minute, shared by every address of the /64.
	okays, last := 0, 0
	for i := range 125 {
		last = do(netnsClients[i%len(netnsClients)], http.MethodGet, "/api/v1/summary", "")
		if last == http.StatusOK {
			okays++
		}
	}
	if okays < 120 || okays > 121 || last != http.StatusTooManyRequests {
		t.Errorf("125 API requests from %d addresses of one /64: %d answered, the last %d; want one client's 120, then 429", len(netnsClients), okays, last)
	}
	for _, src := range []string{netnsOther, "127.0.0.2", "127.0.0.3"} {
		if code := do(src, http.MethodGet, "/api/v1/summary", ""); code != http.StatusOK {
			t.Errorf("an API request from %s: %d; want a bucket of its own", src, code)
		}
	}

	// Test requests: 3 an hour for the whole /64.
	var codes []int
	for i := range 6 {
		codes = append(codes, do(netnsAskers[i], http.MethodPost, "/api/v1/requests", fmt.Sprintf(`{"model": %q}`, ids[i])))
	}
	if codes[0] != http.StatusAccepted || codes[2] != http.StatusAccepted || codes[3] != http.StatusTooManyRequests || codes[5] != http.StatusTooManyRequests {
		t.Errorf("six test requests from six addresses of one /64: %v; want three accepted, then 429", codes)
	}
	for i, src := range []string{netnsOther, "127.0.0.4"} {
		if code := do(src, http.MethodPost, "/api/v1/requests", fmt.Sprintf(`{"model": %q}`, ids[6+i])); code != http.StatusAccepted {
			t.Errorf("a test request from %s: %d; want it accepted (a client of its own)", src, code)
		}
	}
	stopGracefully(t, "serve", cmd)
}
