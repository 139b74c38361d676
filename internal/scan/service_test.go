package scan

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/proctest"
	"github.com/google-pytorch/torchtpu-scanner/internal/scanlock"
	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
	"github.com/google-pytorch/torchtpu-scanner/store"
)

func TestNextRetryWait(t *testing.T) {
	for _, tt := range []struct{ prev, first, want time.Duration }{
		{0, 5 * time.Minute, 5 * time.Minute},
		{0, 20 * time.Millisecond, 20 * time.Millisecond},
		{5 * time.Minute, 5 * time.Minute, 10 * time.Minute},
		{160 * time.Minute, 5 * time.Minute, 320 * time.Minute},
		{320 * time.Minute, 5 * time.Minute, 6 * time.Hour},
		{6 * time.Hour, 5 * time.Minute, 6 * time.Hour},
	} {
		if got := nextRetryWait(tt.prev, tt.first); got != tt.want {
			t.Errorf("nextRetryWait(%v, %v) = %v, want %v", tt.prev, tt.first, got, tt.want)
		}
	}
}

// runService runs svc until the test ends.
func runService(t *testing.T, svc *Service) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// retryTimer is a fake of the service's timer: each wait the service asks
// for arrives on waits, and fires when the test sends on its channel.
type retryTimer struct {
	d    time.Duration
	fire chan time.Time
}

func fakeTimer(svc *Service) chan retryTimer {
	waits := make(chan retryTimer, 16)
	svc.after = func(d time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		waits <- retryTimer{d, c}
		return c
	}
	return waits
}

func nextWait(t *testing.T, waits chan retryTimer) retryTimer {
	t.Helper()
	select {
	case w := <-waits:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the service set no retry timer in 10 s")
		return retryTimer{}
	}
}

// TestServiceHubDownBackoff: while the Hub is down, the service retries
// after 5 min, doubling each time up to 6 h; once a scan reaches the Hub
// the wait starts again from 5 min.
func TestServiceHubDownBackoff(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	setDown := func(down bool) {
		f.hub.mu.Lock()
		defer f.hub.mu.Unlock()
		f.hub.listErr = nil
		if down {
			f.hub.listErr = errors.New("dial tcp: connection refused")
		}
	}
	setDown(true)
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	waits := fakeTimer(svc)
	runService(t, svc)

	if err := svc.Request("startup"); err != nil {
		t.Fatal(err)
	}
	m := time.Minute
	want := []time.Duration{5 * m, 10 * m, 20 * m, 40 * m, 80 * m, 160 * m, 320 * m, 6 * time.Hour, 6 * time.Hour}
	var last retryTimer
	for i, d := range want {
		last = nextWait(t, waits)
		if last.d != d {
			t.Fatalf("wait %d: %v, want %v (the sequence is %v)", i, last.d, d, want)
		}
		if i < len(want)-1 {
			last.fire <- time.Now()
		}
	}
	setDown(false)
	last.fire <- time.Now() // the retry reaches the Hub
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return f.status(t, "a/1") == compat.StatusPass })
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return !svc.State().Running })
	setDown(true)
	if err := svc.Request("manual"); err != nil {
		t.Fatal(err)
	}
	if w := nextWait(t, waits); w.d != 5*m {
		t.Errorf("after a scan that reached the Hub, the next wait is %v, want 5m", w.d)
	}
	scans, err := f.store.ListScans(context.Background(), 20)
	if err != nil || len(scans) != len(want)+2 {
		t.Fatalf("%d scans (%v), want %d: startup, %d retries, manual", len(scans), err, len(want)+2, len(want))
	}
	// Newest first: the manual one, the retry that reached the Hub, the failed retries, the startup scan.
	var triggers []string
	for _, sc := range scans {
		triggers = append(triggers, sc.Trigger)
	}
	wantTriggers := []string{"manual"}
	for range want {
		wantTriggers = append(wantTriggers, "retry")
	}
	wantTriggers = append(wantTriggers, "startup")
	if !slices.Equal(triggers, wantTriggers) || scans[1].Status != store.ScanDone || scans[2].Status != store.ScanFailed {
		t.Errorf("scans (newest first): triggers %v, want %v; the last retry %s, the one before %s",
			triggers, wantTriggers, scans[1].Status, scans[2].Status)
	}
}

// TestScheduledScanRuns: the cron schedule really starts a scan, which
// runs to the end and records its models.
func TestScheduledScanRuns(t *testing.T) {
	f := newFixture(t, model("a/1", "text-generation", "transformers"))
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	if err := svc.Schedule("@every 1s"); err != nil { // robfig/cron's shortest interval
		t.Fatal(err)
	}
	runService(t, svc)
	var scans []store.Scan
	testenv.Eventually(t, "the condition", 10*time.Second, func() bool {
		var err error
		scans, err = f.store.ListScans(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(scans) > 0 && scans[len(scans)-1].Status == store.ScanDone
	})
	if first := scans[len(scans)-1]; first.Trigger != "schedule" || first.Done != 1 {
		t.Errorf("first scan %+v: want a finished scheduled scan of 1 model", first)
	}
	if got := f.status(t, "a/1"); got != compat.StatusPass {
		t.Errorf("a/1 is %s after the scheduled scan", got)
	}
}

// The service's and scanner's waits have their documented defaults when
// left unset (zero or negative), and take what is set.
func TestServiceWaitDefaults(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  time.Duration
		got  func(time.Duration) time.Duration
		def  time.Duration
	}{
		{"LockPoll", 0, func(d time.Duration) time.Duration { return (&Service{LockPoll: d}).lockPoll() }, 5 * time.Second},
		{"RequestPoll", 0, func(d time.Duration) time.Duration { return (&Service{RequestPoll: d}).requestPoll() }, time.Minute},
		{"RetryAfter", 0, func(d time.Duration) time.Duration { return (&Service{RetryAfter: d}).firstRetry() }, 5 * time.Minute},
		{"FleetWait", 0, func(d time.Duration) time.Duration { return (&Scanner{FleetWait: d}).fleetWait() }, 10 * time.Minute},
	} {
		for _, set := range []time.Duration{0, -time.Second} {
			if got := tt.got(set); got != tt.def {
				t.Errorf("%s %v: %v, want the default %v", tt.name, set, got, tt.def)
			}
		}
		if got := tt.got(time.Nanosecond); got != time.Nanosecond {
			t.Errorf("%s 1ns: %v, want 1ns", tt.name, got)
		}
	}
}

// State's ScanID is the last scan's even when it reported no progress (no
// models), stays so after a scan that failed before it had a record, and
// beside another process's scan whose holder has not named its scan yet.
func TestStateKeepsTheLastScanID(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.s.ScanLock = filepath.Join(t.TempDir(), "scanner.db")
	svc := NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	sc, err := svc.runScan(ctx, Options{Mode: compat.ModeArch})
	if err != nil || sc.ID == 0 || sc.Planned != 0 {
		t.Fatalf("empty scan: %+v %v", sc, err)
	}
	other, err := scanlock.TryLock(f.s.ScanLock) // another process, before it names its scan
	if err != nil {
		t.Fatal(err)
	}
	if st := svc.State(); !st.Running || !st.Foreign || st.ScanID != sc.ID {
		t.Errorf("beside a foreign scan with no id yet: %+v, want it running and scan id %d kept", st, sc.ID)
	}
	other.Release()

	f.s.ScanLock = "" // a fresh service: State does not look for a foreign scan
	svc = NewService(f.s, Options{Mode: compat.ModeArch}, quiet)
	if sc, err = svc.runScan(ctx, Options{Mode: compat.ModeArch}); err != nil {
		t.Fatal(err)
	}
	if st := svc.State(); st.ScanID != sc.ID || st.Running {
		t.Errorf("after an empty scan: %+v, want scan %d, not running", st, sc.ID)
	}
	// A scan lock that cannot be taken (its folder is missing): the scan
	// fails before it has a record.
	f.s.ScanLock = filepath.Join(t.TempDir(), "missing", "scanner.db")
	if failed, err := svc.runScan(ctx, Options{Mode: compat.ModeArch}); err == nil || failed.ID != 0 {
		t.Fatalf("scan without its lock: %+v %v, want an error and no record", failed, err)
	}
	if st := svc.State(); st.ScanID != sc.ID {
		t.Errorf("after a scan that never started: scan id %d, want the last scan's %d", st.ScanID, sc.ID)
	}
}

// A scheduled tick while a scan already waits is dropped, and says so in
// the log; one that is queued logs nothing of the kind.
func TestScheduleLogsADroppedTick(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		var buf bytes.Buffer
		svc := NewService(&Scanner{}, Options{}, slog.New(slog.NewTextHandler(&buf, nil)))
		if waiting {
			if err := svc.Request("manual"); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.Schedule("@every 1h"); err != nil {
			t.Fatal(err)
		}
		entries := svc.cron.Entries()
		if len(entries) != 1 {
			t.Fatalf("%d cron entries, want 1", len(entries))
		}
		entries[0].WrappedJob.Run() // the tick, now
		svc.stopSchedule()
		if got := len(svc.queue); got != 1 {
			t.Errorf("waiting %v: %d scans queued after the tick, want 1", waiting, got)
		}
		dropped := strings.Contains(buf.String(), `msg="scheduled scan not queued" reason="a scan is already queued"`)
		if dropped != waiting {
			t.Errorf("waiting %v: dropped tick logged %v; log:\n%s", waiting, dropped, buf.String())
		}
	}
}

// A retry whose time comes while a scan already waits is dropped, and
// says so in the log; one that is queued logs nothing of the kind.
func TestRetryLogsADroppedRetry(t *testing.T) {
	for _, waiting := range []bool{false, true} {
		var buf proctest.Buffer
		svc := NewService(&Scanner{}, Options{}, slog.New(slog.NewTextHandler(&buf, nil)))
		waits := fakeTimer(svc)
		if waiting {
			if err := svc.Request("manual"); err != nil {
				t.Fatal(err)
			}
		}
		svc.retryLater(context.Background(), ErrHub)
		nextWait(t, waits).fire <- time.Now()
		const dropped = `msg="retry scan not queued" reason="a scan is already queued"`
		if waiting {
			testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return strings.Contains(buf.String(), dropped) })
			continue
		}
		testenv.Eventually(t, "the condition", 10*time.Second, func() bool { return len(svc.queue) == 1 })
		if trigger := <-svc.queue; trigger != "retry" {
			t.Errorf("queued %q, want retry", trigger)
		}
		if strings.Contains(buf.String(), dropped) {
			t.Errorf("a queued retry logged as dropped; log:\n%s", buf.String())
		}
	}
}

// State warns when it cannot look at the database's scan lock, and only
// then.
func TestStateWarnsOfAnUnreadableScanLock(t *testing.T) {
	for _, readable := range []bool{true, false} {
		var buf bytes.Buffer
		s := &Scanner{ScanLock: filepath.Join(t.TempDir(), "scanner.db")}
		if !readable { // a file where its folder should be
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			s.ScanLock = filepath.Join(file, "scanner.db")
		}
		svc := NewService(s, Options{}, slog.New(slog.NewTextHandler(&buf, nil)))
		if st := svc.State(); st.Running || st.Foreign {
			t.Errorf("readable %v: %+v, want no scan running", readable, st)
		}
		warned := strings.Contains(buf.String(), `level=WARN msg="scan lock"`)
		if warned == readable {
			t.Errorf("readable %v: warned %v; log:\n%s", readable, warned, buf.String())
		}
	}
}
