package web

import (
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/store"
	"github.com/google-pytorch/torchtpu-scanner/web/api"
)

// TestShardedResults: the table's chips column shows what a sharded probe
// ran on under readiness's estimate, the model page how it was sharded;
// the API carries devices_used and sharding; the feed and compare treat a
// sharded verdict like any other (its regression is a regression).
func TestShardedResults(t *testing.T) {
	ts := newTestServer(t, 0, 0, Config{PublicURL: "https://compat.example.org"})
	ts.upsert(t, store.ModelUpsert{ID: "big/model", Task: "text-generation", Downloads: 900},
		store.ModelUpsert{ID: "small/model", Task: "text-generation", Downloads: 100})
	sharded := func(r compat.Result, n int, how compat.Sharding) compat.Result {
		r.DevicesUsed, r.Sharding = n, &how
		return r
	}
	pass := passOn(compat.TargetTPU, testTime.Add(-2*time.Hour), 40)
	pass.Runtime = rtV1
	ts.record(t, "big/model", sharded(pass, 8, compat.ShardingTP))
	fail := failOn(compat.TargetTPU, testTime, "aten::all_gather")
	fail.Runtime = rtV2
	ts.record(t, "big/model", sharded(fail, 8, compat.ShardingTP))
	cpu := passOn(compat.TargetCPU, testTime, 3)
	ts.record(t, "big/model", sharded(cpu, 2, compat.ShardingFSDP))
	one := passOn(compat.TargetTPU, testTime, 50)
	one.DevicesUsed = 1
	ts.record(t, "small/model", one)

	table := ts.get(t, "/?target=tpu")
	if !strings.Contains(table.body, `<small class="muted">8 × v6e, measured</small>`) {
		t.Errorf("table: no \"8 × v6e, measured\" under the chips estimate:\n%s", table.body)
	}
	if strings.Contains(table.body, "1 × v6e") || strings.Count(table.body, ", measured</small>") != 1 {
		t.Errorf("table: a one-device probe is noted as measured chips")
	}
	page := ts.get(t, "/models/big/model")
	for _, want := range []string{
		"<dt>Devices</dt><dd>8 × v6e, sharded by tensor parallel (transformers&#39; own plan)</dd>",
		"<dt>Devices</dt><dd>2 × cpu, sharded by FSDP2 (fully_shard per layer)</dd>",
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("model page lacks %q", want)
		}
	}
	if small := ts.get(t, "/models/small/model"); strings.Contains(small.body, "<dt>Devices</dt>") {
		t.Error("a one-device result says how it was sharded")
	}
	fromAPI := ts.get(t, "/api/v1/models/big/model?target=tpu")
	if !strings.Contains(fromAPI.body, `"devices_used":8`) || !strings.Contains(fromAPI.body, `"sharding":"tp"`) {
		t.Errorf("API: %s", fromAPI.body)
	}
	feed := ts.get(t, "/feed.json?model=big/model")
	if !strings.Contains(feed.body, "regress") {
		t.Errorf("feed: the sharded regression is not one:\n%s", feed.body)
	}
	cmp := decode[api.CompareBody](t, ts.get(t, "/api/v1/compare?base="+keyV1+"&head="+keyV2))
	if got := ids(cmp.Regressed); len(got) != 1 || got[0] != "big/model" {
		t.Errorf("compare: regressed %v, want the sharded model", got)
	}
}
