package scan

import (
	"context"
	"sync"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/store"
)

// keepOwner renews this process's claim on scan id every OwnerBeat until
// the returned func is called (it waits for the renewer to stop): a
// process that stops renewing, wherever it ran, leaves its scan to the
// next (store.ResumeScans, MarkInterrupted).
func (s *Scanner) keepOwner(id int64) (stop func()) {
	every := s.OwnerBeat
	if every <= 0 {
		every = store.OwnerBeat
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for t := time.NewTimer(every); ; t.Reset(every) {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
				if err := s.Store.RenewScanOwner(ctx, id); err != nil && ctx.Err() == nil {
					s.log().Warn("scan owner not renewed", "scan_id", id, "err", err)
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
