package probe

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
)

// TestRankEnv: what each rank of a sharded probe sees, per target, written
// out by hand from torch.distributed's env:// variables and TorchTPU's
// launch variables (shard.go's comment cites them).
func TestRankEnv(t *testing.T) {
	tests := []struct {
		name string
		l    Launch
		rank int
		want []string
	}{
		{"cpu, rank 1 of 2", Launch{Target: compat.TargetCPU, Ranks: 2, MasterPort: 4242, Threads: 8}, 1, []string{
			"RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=4242", "OMP_NUM_THREADS=4"}},
		{"a v6e slice of chips 4 to 7", Launch{Target: compat.TargetTPU, Ranks: 4, Chips: []int{4, 5, 6, 7}, Device: "TPU v6e",
			MasterPort: 4242, SlicePorts: []int{9001, 9002, 9003, 9004}, Session: "77", Threads: 2}, 2, []string{
			"RANK=2", "LOCAL_RANK=2", "WORLD_SIZE=4", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=4242", "OMP_NUM_THREADS=1",
			"TPU_VISIBLE_DEVICES=6", "TPU_VISIBLE_CHIPS=6", "CUDA_VISIBLE_DEVICES=6",
			"TORCH_TPU_SLICEBUILDER_ADDRESSES=localhost:9001,localhost:9002,localhost:9003,localhost:9004",
			"TORCH_TPU_TOPOLOGY=2,2,1", "TORCH_TPU_XPROF_SESSION_ID=77"}},
		// v7's slices count devices (two per chip): 2 devices are one chip.
		{"v7, two devices", Launch{Target: compat.TargetTPU, Ranks: 2, Chips: []int{0, 1}, Device: "TPU v7",
			MasterPort: 1, SlicePorts: []int{5, 6}, Session: "s", Threads: 1}, 0, []string{
			"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", "OMP_NUM_THREADS=1",
			"TPU_VISIBLE_DEVICES=0", "TPU_VISIBLE_CHIPS=0", "CUDA_VISIBLE_DEVICES=0",
			"TORCH_TPU_SLICEBUILDER_ADDRESSES=localhost:5,localhost:6", "TORCH_TPU_TOPOLOGY=1,1,1,2", "TORCH_TPU_XPROF_SESSION_ID=s"}},
		// No topology for an unknown TPU: set_tpu_launch_env detects it in the rank.
		{"an unknown TPU", Launch{Target: compat.TargetTPU, Ranks: 2, Chips: []int{2, 3}, Device: "TPU v9",
			MasterPort: 1, SlicePorts: []int{5, 6}, Session: "s", Threads: 4}, 1, []string{
			"RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1", "OMP_NUM_THREADS=2",
			"TPU_VISIBLE_DEVICES=3", "TPU_VISIBLE_CHIPS=3", "CUDA_VISIBLE_DEVICES=3",
			"TORCH_TPU_SLICEBUILDER_ADDRESSES=localhost:5,localhost:6", "TORCH_TPU_XPROF_SESSION_ID=s"}},
		{"cuda", Launch{Target: compat.TargetCUDA, Ranks: 2, Chips: []int{6, 7}, MasterPort: 3, Threads: 1}, 1, []string{
			"RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=3", "OMP_NUM_THREADS=1",
			"TPU_VISIBLE_DEVICES=7", "TPU_VISIBLE_CHIPS=7", "CUDA_VISIBLE_DEVICES=7"}},
		{"cpu on chips 2 and 3", Launch{Target: compat.TargetCPU, Ranks: 2, Chips: []int{2, 3}, MasterPort: 3, Threads: 2}, 0, []string{
			"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=3", "OMP_NUM_THREADS=1",
			"TPU_VISIBLE_DEVICES=2", "TPU_VISIBLE_CHIPS=2", "CUDA_VISIBLE_DEVICES=2"}},
	}
	for _, tt := range tests {
		if got := RankEnv(tt.l, tt.rank); !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// TestParseOOMKill reads the out-of-memory killer's count from the three
// files that carry it.
func TestParseOOMKill(t *testing.T) {
	tests := []struct {
		text string
		n    uint64
		ok   bool
	}{
		{"low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n", 2, true}, // cgroup v2 memory.events
		{"oom_kill_disable 0\nunder_oom 0\noom_kill 7\n", 7, true},                // cgroup v1 memory.oom_control
		{"pgfault 99\noom_kill 0\n", 0, true},                                     // /proc/vmstat
		{"oom_kill_disable 0\nunder_oom 0\n", 0, false},                           // a kernel before 4.13
		{"oom_kill x\n", 0, false},
	}
	for _, tt := range tests {
		if n, ok := parseOOMKill([]byte(tt.text)); n != tt.n || ok != tt.ok {
			t.Errorf("%q: %d %v, want %d %v", tt.text, n, ok, tt.n, tt.ok)
		}
	}
}

// TestShardedProbe runs sharded stand-ins under the real keeper: each rank
// gets its own rendezvous variables, the first rank to fail ends the probe
// (its failure is the probe's, rank 0 waiting for it notwithstanding), and
// no rank outlives the probe.
func TestShardedProbe(t *testing.T) {
	t.Parallel()
	// A long rank grace, so that ending at once and ending after it differ
	// by far; rank 0's end is tested with a short one.
	long := standinRunner(t, func(c *Config) { c.Timeout, c.RankGrace = 60*time.Second, 30*time.Second })
	short := standinRunner(t, func(c *Config) { c.Timeout, c.RankGrace = 60*time.Second, time.Second })
	tests := []struct {
		behaviour string
		r         *Runner
		status    compat.Status
		class     compat.FailureClass
		stage     compat.Stage
		msg       string
		within    time.Duration
	}{
		{"ranks-pass", long, compat.StatusPass, "", compat.StageGenerate, "", 15 * time.Second},
		// Rank 1 dies: the keeper kills rank 0 at once, without the grace.
		{"ranks-kill1", long, compat.StatusCrash, compat.ClassCrash, compat.StageForward, "rank 1 of 2 died of SIGKILL during stage forward", 15 * time.Second},
		{"ranks-fail1", long, compat.StatusFail, compat.ClassUnsupportedOp, compat.StageForward, "rank 1 of 2: NotImplementedError: aten::standin", 15 * time.Second},
		// Rank 0 is done: the others get the grace, then are killed.
		{"ranks-linger", short, compat.StatusPass, "", compat.StageGenerate, "", 15 * time.Second},
		{"ranks-rank0-fail", short, compat.StatusFail, compat.ClassNumericsMismatch, compat.StageNumerics, "max_abs_diff 9", 15 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			r := tt.r
			tag := uniqueTag()
			req := standinRequest(t, tt.behaviour+"."+tag)
			req.Devices = 2
			start := time.Now()
			res := r.Probe(context.Background(), req)
			took := time.Since(start)
			if res.Status != tt.status || str(res.Stage) != string(tt.stage) || str(res.FailureClass) != string(tt.class) ||
				!strings.Contains(str(res.Message), tt.msg) {
				t.Errorf("got %s/%s/%s %q, want %s/%s/%s %q\n%s", res.Status, str(res.Stage), str(res.FailureClass),
					str(res.Message), tt.status, tt.stage, tt.class, tt.msg, tail(res.LogTail))
			}
			if res.DevicesUsed != 2 || !strings.HasSuffix(res.Repro, " --devices 2") {
				t.Errorf("devices_used %d, repro %q: the probe ran on 2", res.DevicesUsed, res.Repro)
			}
			if took > tt.within {
				t.Errorf("took %v, want under %v", took, tt.within)
			}
			waitNoProcs(t, tag)
		})
	}
}

// TestShardedProbeRankEnvironment: on a TPU host, the ranks of a probe over
// chips 4 to 7 each see their own chip, the same rendezvous and slice
// builder addresses, and the slice's topology; rank 0's result records 4
// devices.
func TestShardedProbeRankEnvironment(t *testing.T) {
	t.Setenv("TPU_STANDIN_DEVICE", "TPU v6e")
	r := standinRunner(t, nil)
	if target, _, err := r.Env(context.Background(), compat.TargetTPU); err != nil || target != compat.TargetTPU {
		t.Fatalf("Env(tpu): %s %v", target, err)
	}
	req := standinRequest(t, "ranks-pass")
	req.Target, req.Devices, req.Chips = compat.TargetTPU, 4, []int{4, 5, 6, 7}
	res := r.Probe(context.Background(), req)
	if res.Status != compat.StatusPass || res.DevicesUsed != 4 || res.Sharding == nil || *res.Sharding != compat.ShardingTP {
		t.Fatalf("got %s on %d devices (%v): %s\n%s", res.Status, res.DevicesUsed, res.Sharding, str(res.Message), tail(res.LogTail))
	}
	var ranks []map[string]*string
	if err := json.Unmarshal([]byte(str(res.Message)), &ranks); err != nil || len(ranks) != 4 {
		t.Fatalf("message %q: %v", str(res.Message), err)
	}
	v := func(r int, k string) string {
		if p := ranks[r][k]; p != nil {
			return *p
		}
		return "<unset>"
	}
	for rank := range 4 {
		want := map[string]string{
			"RANK": itoa(rank), "LOCAL_RANK": itoa(rank), "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1",
			"TPU_VISIBLE_DEVICES": itoa(4 + rank), "TPU_VISIBLE_CHIPS": itoa(4 + rank), "TORCH_TPU_TOPOLOGY": "2,2,1",
			"MASTER_PORT": v(0, "MASTER_PORT"), "TORCH_TPU_SLICEBUILDER_ADDRESSES": v(0, "TORCH_TPU_SLICEBUILDER_ADDRESSES"),
			"TORCH_TPU_XPROF_SESSION_ID": v(0, "TORCH_TPU_XPROF_SESSION_ID"),
		}
		for k, w := range want {
			if got := v(rank, k); got != w || got == "<unset>" {
				t.Errorf("rank %d: %s=%s, want %s", rank, k, got, w)
			}
		}
	}
	if addrs := strings.Split(v(0, "TORCH_TPU_SLICEBUILDER_ADDRESSES"), ","); len(addrs) != 4 || slices.Contains(addrs, "localhost:"+v(0, "MASTER_PORT")) {
		t.Errorf("slice builder addresses %q: want 4 ports, none the rendezvous's", addrs)
	}
}

// TestShardedRequestChecks: a sharded request that cannot be run as asked
// is the scanner's error, never the model's.
func TestShardedRequestChecks(t *testing.T) {
	r := standinRunner(t, nil)
	for _, mod := range []func(*Request){
		func(q *Request) { q.Devices, q.Chips = 2, []int{0} },
		func(q *Request) { q.Devices, q.Sharding = 2, "pipeline" },
		func(q *Request) { q.Devices = MaxDevices + 1 },
	} {
		req := standinRequest(t, "ranks-pass")
		mod(&req)
		if res := r.Probe(context.Background(), req); res.Status != compat.StatusError || res.Status.HeldAgainstModel() {
			t.Errorf("%+v: %s %q, want the scanner's error", req, res.Status, str(res.Message))
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestStageTrackerFollowsEachRank: the ranks of a sharded probe share
// stderr; a line that starts with "[rank N]" moves rank N's stage, and
// every stage line moves the last one.
func TestStageTrackerFollowsEachRank(t *testing.T) {
	var s stageTracker
	s.Write([]byte("[rank 1] stage=forward start\n[rank 0] stage=env start\nstage=load start\n  [rank 12] stage=compile ok\n"))
	if s.Stage() != compat.StageCompile || s.ranks[1] != compat.StageForward || s.ranks[0] != compat.StageEnv ||
		s.ranks[12] != compat.StageCompile || len(s.ranks) != 3 {
		t.Errorf("last %q, ranks %v", s.Stage(), s.ranks)
	}
}

// TestFailedRank: only a rank other than 0 that died or exited other than 0
// ends the probe as its own failure.
func TestFailedRank(t *testing.T) {
	one, zero, nine := 1, 0, 9
	tests := []struct {
		name string
		rep  keeperReport
		rank int
		ok   bool
	}{
		{"rank 1 killed", keeperReport{Decisive: &one, Ends: []rankEnd{{Rank: 1, Signal: &nine}}}, 1, true},
		{"rank 1 exited 3", keeperReport{Decisive: &one, Ends: []rankEnd{{Rank: 1, Exit: compat.Ptr(3)}}}, 1, true},
		{"rank 1 exited 0", keeperReport{Decisive: &one, Ends: []rankEnd{{Rank: 1, Exit: &zero}}}, 0, false},
		{"rank 1 decisive, no end", keeperReport{Decisive: &one}, 0, false},
		{"rank 0 ended it", keeperReport{Decisive: &zero, Ends: []rankEnd{{Rank: 0, Signal: &nine}}}, 0, false},
		{"nothing said", keeperReport{}, 0, false},
	}
	for _, tt := range tests {
		if rank, ok := tt.rep.failedRank(); rank != tt.rank || ok != tt.ok {
			t.Errorf("%s: %d %v, want %d %v", tt.name, rank, ok, tt.rank, tt.ok)
		}
	}
}
