package benchserve

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
)

func TestServe(t *testing.T) {
	var ln net.Listener
	base := Serve(func(l net.Listener) error {
		ln = l
		return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hi") }))
	})
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(base) {
		t.Errorf("base %s", base)
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	defer ln.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %s", resp.Status)
	}
	// A listen that fails is logged (the bench goes on; its figures show
	// the failure); one that ends well is not.
	var logged proctest.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	for _, err := range []error{nil, errors.New("accept: too many open files")} {
		ended := make(chan struct{})
		Serve(func(l net.Listener) error { defer close(ended); l.Close(); return err })
		<-ended
	}
	for deadline := time.Now().Add(5 * time.Second); logged.String() == "" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	if got := logged.String(); !strings.HasSuffix(got, " accept: too many open files\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("logged %q", got)
	}
}

// Minimal answers "ok" to every request, on a loopback port.
func TestMinimal(t *testing.T) {
	base, app := Minimal()
	defer app.Shutdown()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("base %s", base)
	}
	for _, path := range []string{"/", "/badge/any/model.svg"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Errorf("%s: %s %q", path, resp.Status, body)
		}
	}
}
