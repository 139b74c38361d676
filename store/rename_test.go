package store_test

import (
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/store/storetest"
)

// TestRenameKeepsWhatIsShown: when a model's old id is merged into its new
// one (the Hub renamed it), the result shown on each target and on "any
// target" (the newest; of two at the same time, the one recorded last) is
// what it was before the rename ("" = no result).
func TestRenameKeepsWhatIsShown(t *testing.T) {
	type rec struct {
		target compat.Target
		status compat.Status
		at     time.Time
	}
	tests := []struct {
		name string
		recs []rec // in the order recorded, all under the old id
		want map[compat.Target]compat.Status
	}{
		{"newest across targets", []rec{{"tpu", "fail", at(1)}, {"cpu", "pass", at(3)}, {"cuda", "oom", at(2)}},
			map[compat.Target]compat.Status{"tpu": "fail", "cpu": "pass", "cuda": "oom", "": "pass"}},
		{"newest recorded first", []rec{{"cpu", "pass", at(3)}, {"tpu", "fail", at(1)}, {"cuda", "oom", at(2)}},
			map[compat.Target]compat.Status{"tpu": "fail", "cpu": "pass", "cuda": "oom", "": "pass"}},
		{"same time: cpu recorded last", []rec{{"tpu", "fail", at(5)}, {"cpu", "pass", at(5)}},
			map[compat.Target]compat.Status{"tpu": "fail", "cpu": "pass", "": "pass"}},
		{"same time: tpu recorded last", []rec{{"cpu", "pass", at(5)}, {"tpu", "fail", at(5)}},
			map[compat.Target]compat.Status{"tpu": "fail", "cpu": "pass", "": "fail"}},
		{"never tested", nil, map[compat.Target]compat.Status{"tpu": "", "cpu": "", "": ""}},
		{"an older result on the newest's target", []rec{{"cpu", "pass", at(4)}, {"tpu", "fail", at(3)}, {"cpu", "oom", at(1)}},
			map[compat.Target]compat.Status{"tpu": "fail", "cpu": "pass", "": "pass"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.MustOpen(t)
			upsert(t, s, "old-name")
			for _, r := range tt.recs {
				record(t, s, "old-name", result(r.target, r.status, r.at))
			}
			check := func(when, id string) {
				t.Helper()
				for target, want := range tt.want {
					m, err := s.GetModel(ctx, id, target)
					var got compat.Status
					if m.Result != nil {
						got = m.Result.Status
					}
					if err != nil || got != want {
						t.Errorf("%s: %s on %q shows %q, %v; want %s", when, id, target, got, err, want)
					}
				}
			}
			check("before the rename", "old-name")
			if err := s.UpsertModels(ctx, []store.ModelUpsert{{ID: "org/new-name", Aliases: []string{"old-name"}}}); err != nil {
				t.Fatal(err)
			}
			check("after the rename", "org/new-name")
			check("after the rename, by the old id", "old-name")
		})
	}
}
