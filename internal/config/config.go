// Package config is the scanner's configuration: one typed struct, filled
// from flags and environment variables (a flag wins over its variable),
// validated once at load, and passed in. Nothing else reads the
// environment for settings; the one other reader is the probe runner, which
// hands the allow-listed accelerator variables (TPU_*, PJRT_*, CUDA_*,
// PATH, ...) through to the harness unread (probe.Config.Environ).
//
// The defaults are set here once (Defaults, and the Default constants that
// the packages receiving these settings fall back on when a caller leaves
// one zero: the scan's options, the runner, the worker, the Hub listing),
// as are the words --sort takes (Sorts).
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/fleet"
	"github.com/google-pytorch/torchtpu-scanner/internal/knownissues"
	"github.com/google-pytorch/torchtpu-scanner/internal/watch"
)

// The IPv6 client prefix (--ipv6-client-prefix): how many leading bits of
// an IPv6 address name one client in every per-client limit. The default
// is a /64, the block one host, home or office network is handed (RFC
// 6177) and may take any address of; a /32 is already a provider's whole
// allocation.
const (
	DefaultIPv6ClientPrefix = 64
	MinIPv6ClientPrefix     = 32
)

// Config is everything the scanner can be told.
type Config struct {
	DB          string
	HubEndpoint string
	Token       string
	CacheDir    string
	// CacheHome is the scanner's own cache folder, where scripts/pyenv.sh
	// keeps the harness's Python environment (venv-<hash>); the default
	// --python is its interpreter.
	CacheHome string
	Target    compat.Target
	Python    string
	// VLLMPython is an interpreter with vllm-torchtpu installed (a TPU
	// host's Python 3.12 environment, docs/serving.md):
	// the serving probe (internal/serving/measure) runs in it; "" runs none.
	VLLMPython string
	Limit      int
	Sort       string
	Tasks      []string
	Models     []string
	Mode       compat.Mode
	Timeout    time.Duration
	Force      bool
	Source     string // "hub" or "cache"
	Devices    int
	Harness    string        // a harness script to run instead of the embedded one
	ProbeGrace time.Duration // SIGTERM → SIGKILL grace of a probe being stopped
	NoLandlock bool          // run the harness without Landlock (--landlock=false)
	Revision   string        // probe only
	JSON       bool          // probe only
	Server     string        // check only
	Since      string        // check only: a runtime key (compat.RuntimeRef.Key)
	CheckMode  string        // check only: the verdict that gates, CheckInference or CheckTrain
	LogFormat  string        // "text" or "json"
	LogLevel   string
	Verbose    bool // scan on a terminal: info log lines too (else warnings and errors only)

	// ScanTimeout is a whole scan's deadline; a scan past it ends
	// interrupted, and the next scan tests what it left.
	ScanTimeout time.Duration

	// DeviceMemory is one device's memory for the plan, in bytes
	// (--device-memory; 0: the device's own): a model that needs more is
	// sharded over several devices when the host has them.
	DeviceMemory int64

	// serve only
	Addr       string
	Schedule   string
	NoSchedule bool
	AdminToken string
	PublicURL  string
	RateLimit  int // API requests per minute per client; 0 = off

	// the fleet: serve --dispatch workers, and scanner worker (which reads
	// Server, and Addr for its /healthz)
	Dispatch    string        // "local" (this process probes) or "workers"
	LeaseTTL    time.Duration // a lease not renewed within it goes back to the queue
	WorkerToken string        // SCANNER_WORKER_TOKEN: the work routes' token
	// WorkerWait is how long a scan waits for a live worker that can take
	// its jobs: at its start (else it fails and is retried), and whenever
	// its queued jobs match none (a rollout: then they are re-planned for
	// the runtime the fleet runs, or the scan ends).
	WorkerWait time.Duration

	// TrustedProxies are the addresses (IPs or CIDRs) whose X-Forwarded-*
	// headers are believed; from anyone else the connection decides the
	// client's address, scheme and host.
	TrustedProxies []string
	// IPv6ClientPrefix is how many leading bits of an IPv6 address name one
	// client for every per-client limit (--rate-limit, --request-rate):
	// 64 counts a /64 as one client; IPv4 addresses count one by one.
	IPv6ClientPrefix int

	// Watching, asking, knowing (serve; watch.go): the files as named, and
	// what they hold, read and checked at load.
	WebhooksFile    string
	Webhooks        []watch.Webhook
	KnownIssuesFile string
	KnownIssues     knownissues.Table
	RequestRate     int // test requests per client (IP) per hour; 0 = no limit
	RequestQueue    int // the most open test requests; 0 turns requests off
	// RequestShare is the most of the device's time test requests may take
	// (0 < share ≤ 1; 1: no bound).
	RequestShare float64
}

// The values of --dispatch.
const (
	DispatchLocal   = "local"
	DispatchWorkers = "workers"
)

// Env is a lookup of environment variables (os.LookupEnv in production).
type Env func(string) (string, bool)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// The defaults of the settings that packages below config fall back on too
// (for a zero value), set once here.
const (
	DefaultLimit      = 100              // --limit: how many popular models
	DefaultSort       = "downloads"      // --sort
	DefaultTimeout    = 20 * time.Minute // --timeout: one probe's wall-clock limit
	DefaultProbeGrace = 10 * time.Second // --probe-grace: SIGTERM to SIGKILL of a probe
	DefaultDevices    = 1                // --devices
	DefaultSource     = "hub"            // --source
)

// Sorts are the popularity orders --sort takes (internal/hub maps each to
// the Hub's own key).
var Sorts = []string{"downloads", "likes", "trending"}

// Defaults returns the configuration before flags and environment.
func Defaults() Config {
	return Config{
		DB:               filepath.Join("data", "scanner.db"),
		HubEndpoint:      "https://huggingface.co",
		Target:           compat.TargetAuto,
		Limit:            DefaultLimit,
		Sort:             DefaultSort,
		Mode:             compat.ModeAuto,
		Timeout:          DefaultTimeout,
		Source:           DefaultSource,
		Devices:          DefaultDevices,
		ScanTimeout:      24 * time.Hour,
		ProbeGrace:       DefaultProbeGrace,
		LogFormat:        "text",
		LogLevel:         "info",
		Addr:             ":8080",
		Schedule:         "0 */6 * * *",
		RateLimit:        600,
		IPv6ClientPrefix: DefaultIPv6ClientPrefix,
		Dispatch:         DispatchLocal,
		LeaseTTL:         fleet.DefaultLeaseTTL,
		RequestRate:      DefaultRequestRate,
		RequestQueue:     DefaultRequestQueue,
		RequestShare:     DefaultRequestShare,
		WorkerWait:       10 * time.Minute,
	}
}

// Command names the subcommand whose flags are parsed.
type Command string

// The scanner's subcommands.
const (
	CmdServe   Command = "serve"
	CmdScan    Command = "scan"
	CmdProbe   Command = "probe"
	CmdCheck   Command = "check"
	CmdBackup  Command = "backup"
	CmdVersion Command = "version"
	CmdWorker  Command = "worker"
)

// Parse fills a Config for cmd from args and env, and validates it. It
// returns the remaining positional arguments. flag.ErrHelp is returned
// (after the usage was written to out) when -h was asked.
func Parse(cmd Command, args []string, env Env, out io.Writer) (Config, []string, error) {
	c := Defaults()
	if err := c.fromEnv(env); err != nil {
		return c, nil, err
	}
	fs := flag.NewFlagSet("scanner "+string(cmd), flag.ContinueOnError)
	fs.SetOutput(out)
	target, mode := string(c.Target), string(c.Mode)
	b := &flagBinder{fs: fs, c: &c, target: &target, mode: &mode}
	if err := b.register(cmd); err != nil {
		return c, nil, err
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	c.Tasks = append(c.Tasks, b.tasks...)
	c.Models = append(c.Models, b.models...)
	if len(b.proxies) > 0 {
		c.TrustedProxies = b.proxies // the flag replaces the variable
	}
	if cmd == CmdCheck && c.Since != "" && !flagSet(fs, "target") {
		target = string(compat.TargetAuto) // the --since runtime's target
	}
	if err := c.setTargetMode(cmd, target, mode); err != nil {
		return c, nil, err
	}
	if cmd == CmdServe {
		if err := c.loadWatchFiles(); err != nil {
			return c, nil, err
		}
	}
	if c.CacheDir == "" {
		c.CacheDir = defaultCacheDir(env)
	}
	c.CacheHome = CacheHome(env)
	return c, fs.Args(), c.Validate(cmd)
}

// flagBinder declares each command's flags on fs, into c and the
// strings Parse resolves after parsing (target, mode, the repeatables).
type flagBinder struct {
	fs                     *flag.FlagSet
	c                      *Config
	target, mode           *string
	tasks, models, proxies stringList
}

// register declares cmd's flags.
func (b *flagBinder) register(cmd Command) error {
	switch cmd {
	case CmdServe:
		b.common()
		b.hub()
		b.scan()
		b.fs.StringVar(&b.c.Addr, "addr", b.c.Addr, "listen address [SCANNER_ADDR]")
		b.fs.StringVar(&b.c.Schedule, "schedule", b.c.Schedule, "cron spec of scheduled scans [SCANNER_SCHEDULE]")
		b.fs.BoolVar(&b.c.NoSchedule, "no-schedule", b.c.NoSchedule, "no scheduled scans (and no first scan on an empty database)")
		b.fs.StringVar(&b.c.PublicURL, "public-url", b.c.PublicURL, "the site's public URL, for badge snippets and feed ids [SCANNER_PUBLIC_URL]")
		b.fs.IntVar(&b.c.RateLimit, "rate-limit", b.c.RateLimit, "API requests per minute per client (0 = off)")
		b.fs.IntVar(&b.c.IPv6ClientPrefix, "ipv6-client-prefix", b.c.IPv6ClientPrefix, "an IPv6 client is counted by this many leading bits of its address in every per-client limit (64: its /64; 32 to 128) [SCANNER_IPV6_CLIENT_PREFIX]")
		b.fs.Var(&b.proxies, "trusted-proxies", "IPs or CIDRs of proxies whose X-Forwarded-* headers are believed, comma-separated [SCANNER_TRUSTED_PROXIES]")
		b.fs.StringVar(&b.c.Dispatch, "dispatch", b.c.Dispatch, "who probes: local (this process) or workers (scanner worker processes lease the probes) [SCANNER_DISPATCH]")
		b.fs.DurationVar(&b.c.LeaseTTL, "lease-ttl", b.c.LeaseTTL, "a worker's lease not renewed by a heartbeat within this goes back to the queue")
		b.c.watchFlags(b.fs)
		b.fs.DurationVar(&b.c.WorkerWait, "worker-wait", b.c.WorkerWait, "how long a scan waits for a live worker that can take its jobs (at its start; after a rollout, before it re-plans them for the fleet's new runtime)")
	case CmdWorker:
		b.c.Addr = "" // a worker listens only when asked (for its /healthz)
		b.fs.StringVar(&b.c.LogFormat, "log-format", b.c.LogFormat, "log format: text or json")
		b.fs.StringVar(&b.c.LogLevel, "log-level", b.c.LogLevel, "log level: debug, info, warn, error")
		b.hub()
		b.fs.IntVar(&b.c.Devices, "devices", b.c.Devices, "accelerator devices on this host; one probe (one lease) per device")
		b.fs.StringVar(&b.c.Server, "server", b.c.Server, "the scanner server to lease probes from [SCANNER_SERVER]")
		b.fs.StringVar(&b.c.Addr, "addr", b.c.Addr, "listen address of the worker's /healthz (none when empty)")
	case CmdScan:
		b.common()
		b.hub()
		b.scan()
	case CmdProbe:
		b.common()
		b.hub()
		b.fs.StringVar(&b.c.Revision, "revision", b.c.Revision, "commit sha to test (default the Hub's current main)")
		b.devices("accelerator devices on this host: a model that needs several is sharded over them")
		b.fs.BoolVar(&b.c.JSON, "json", b.c.JSON, "print the Result as JSON")
	case CmdCheck:
		b.fs.StringVar(&b.c.Server, "server", b.c.Server, "scanner server URL, e.g. https://tpu-compat.example.org")
		b.fs.StringVar(b.target, "target", "tpu", "target whose result gates: tpu, cpu or cuda (auto: the newest result on any; with --since: the runtime's)")
		b.fs.StringVar(&b.c.Since, "since", b.c.Since, "a runtime key (see /runtimes): exit 1 also when the model regressed since that runtime")
		b.fs.StringVar(&b.c.CheckMode, "mode", CheckInference, "the verdict that gates: inference (the model's status), train (the train step's) or serve (vLLM-TorchTPU's serving cell)")
	case CmdBackup:
		b.common()
	case CmdVersion:
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

// common: the flags of every command that opens the database.
func (b *flagBinder) common() {
	b.fs.StringVar(&b.c.DB, "db", b.c.DB, "SQLite file, created with its folder [SCANNER_DB]")
	b.fs.StringVar(&b.c.LogFormat, "log-format", b.c.LogFormat, "log format: text or json")
	b.fs.StringVar(&b.c.LogLevel, "log-level", b.c.LogLevel, "log level: debug, info, warn, error")
	b.fs.BoolVar(&b.c.Verbose, "v", b.c.Verbose, "scan on a terminal: show info log lines above the progress bar (default: warnings and errors only)")
}

// hub: where models come from and how probes run.
func (b *flagBinder) hub() {
	b.fs.StringVar(&b.c.HubEndpoint, "hub-endpoint", b.c.HubEndpoint, "any Hub-compatible server or mirror [HF_ENDPOINT]")
	b.fs.StringVar(&b.c.Token, "token", b.c.Token, "Hub token, sent as Authorization: Bearer to the Hub only [HF_TOKEN]")
	b.fs.StringVar(&b.c.CacheDir, "cache-dir", b.c.CacheDir, "Hub cache folder, shared with Python tools [HF_HUB_CACHE, else HF_HOME/hub] (default ~/.cache/huggingface/hub)")
	b.fs.StringVar(b.target, "target", *b.target, "where probes run: auto, tpu, cpu or cuda [SCANNER_TARGET]")
	b.fs.StringVar(&b.c.Python, "python", b.c.Python, "Python with torch + transformers (+ torch_tpu) [SCANNER_PYTHON] (default the project's cached environment, see SCANNER_CACHE_HOME)")
	b.fs.StringVar(&b.c.VLLMPython, "vllm-python", b.c.VLLMPython, "Python with vllm-torchtpu installed, for the serving probe; none by default [SCANNER_VLLM_PYTHON]")
	b.fs.StringVar(b.mode, "mode", *b.mode, "weights: auto, full (real safetensors) or arch (random weights, real config)")
	b.fs.DurationVar(&b.c.Timeout, "timeout", b.c.Timeout, "wall-clock limit per probe")
	b.fs.DurationVar(&b.c.ProbeGrace, "probe-grace", b.c.ProbeGrace, "on shutdown or timeout, time a probe gets after SIGTERM before its process group is killed")
	b.fs.StringVar(&b.c.Harness, "harness", b.c.Harness, "run this harness script instead of the embedded one (development, tests) [SCANNER_HARNESS]")
	b.fs.BoolFunc("landlock", "confine the harness with Landlock where the kernel has it; false only on a host whose accelerator driver fails under it (the scanner says so) [SCANNER_LANDLOCK] (default true)",
		func(v string) error { return b.c.setLandlock(v) })
}

// devices: the host's accelerator devices and one device's memory.
func (b *flagBinder) devices(devicesUsage string) {
	b.fs.IntVar(&b.c.Devices, "devices", b.c.Devices, devicesUsage)
	b.fs.Func("device-memory", "one device's memory for the plan, e.g. 48MiB or 30GiB; on cpu, which has none, no sharding without it (default the device's own)",
		func(v string) error {
			n, err := ParseSize(v)
			b.c.DeviceMemory = n
			return err
		})
}

// scan: what a scan lists and how long it may take.
func (b *flagBinder) scan() {
	b.fs.IntVar(&b.c.Limit, "limit", b.c.Limit, "how many popular models")
	b.fs.StringVar(&b.c.Sort, "sort", b.c.Sort, "popularity order: "+strings.Join(Sorts, ", "))
	b.fs.Var(&b.tasks, "task", "Hub pipeline tag to include (repeatable)")
	b.fs.Var(&b.models, "model", "scan exactly this model id (repeatable)")
	b.fs.BoolVar(&b.c.Force, "force", b.c.Force, "retest even where revision and runtime are unchanged")
	b.fs.StringVar(&b.c.Source, "source", b.c.Source, "where models come from: hub, or cache (models already in --cache-dir)")
	b.devices("accelerator devices on this host; one probe runs per device, a model that needs several is sharded over them")
	b.fs.DurationVar(&b.c.ScanTimeout, "scan-timeout", b.c.ScanTimeout, "a whole scan's deadline; past it the scan ends interrupted")
}

// flagSet reports whether the command line set flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (c *Config) fromEnv(env Env) error {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if v := get("SCANNER_DB"); v != "" {
		c.DB = v
	}
	if v := get("HF_ENDPOINT"); v != "" {
		c.HubEndpoint = v
	}
	c.Token = get("HF_TOKEN")
	if v := get("HF_HUB_CACHE"); v != "" {
		c.CacheDir = v
	} else if v := get("HF_HOME"); v != "" {
		c.CacheDir = filepath.Join(v, "hub")
	}
	if v := get("SCANNER_TARGET"); v != "" {
		c.Target = compat.Target(v)
	}
	c.Python = get("SCANNER_PYTHON")
	c.VLLMPython = get("SCANNER_VLLM_PYTHON")
	c.Harness = get("SCANNER_HARNESS")
	if v := get("SCANNER_ADDR"); v != "" {
		c.Addr = v
	}
	if v := get("SCANNER_SCHEDULE"); v != "" {
		c.Schedule = v
	}
	c.AdminToken = get("SCANNER_ADMIN_TOKEN")
	c.PublicURL = get("SCANNER_PUBLIC_URL")
	if v := get("SCANNER_IPV6_CLIENT_PREFIX"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "/"))
		if err != nil {
			return fmt.Errorf("SCANNER_IPV6_CLIENT_PREFIX %q: want a prefix length such as 64", v)
		}
		c.IPv6ClientPrefix = n
	}
	if v := get("SCANNER_TRUSTED_PROXIES"); v != "" {
		_ = (*stringList)(&c.TrustedProxies).Set(v)
	}
	if v := get("SCANNER_DISPATCH"); v != "" {
		c.Dispatch = v
	}
	c.WorkerToken = get("SCANNER_WORKER_TOKEN")
	c.WebhooksFile = get("SCANNER_WEBHOOKS")
	c.KnownIssuesFile = get("SCANNER_KNOWN_ISSUES")
	c.Server = get("SCANNER_SERVER")
	if v := get("SCANNER_LANDLOCK"); v != "" {
		if err := c.setLandlock(v); err != nil {
			return fmt.Errorf("SCANNER_LANDLOCK: %w", err)
		}
	}
	return nil
}

// setTargetMode parses --target and --mode: check selects results (auto:
// any target); the other commands ask for a target to probe on.
func (c *Config) setTargetMode(cmd Command, target, mode string) error {
	parseTarget := compat.ParseTarget
	if cmd == CmdCheck {
		parseTarget = compat.ParseTargetFilter
	}
	var err error
	if c.Target, err = parseTarget(target); err != nil {
		return err
	}
	c.Mode, err = compat.ParseMode(mode)
	return err
}

// setLandlock reads the --landlock switch: true (the default) or false.
func (c *Config) setLandlock(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("landlock: want true or false, got %q", v)
	}
	c.NoLandlock = !on
	return nil
}

func defaultCacheDir(env Env) string {
	return filepath.Join(home(env), ".cache", "huggingface", "hub")
}

func home(env Env) string {
	home, ok := env("HOME")
	if !ok || home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = h
		}
	}
	return home
}

// CacheHome is the scanner's own cache folder, as scripts/pyenv.sh finds
// it: $SCANNER_CACHE_HOME, else $XDG_CACHE_HOME/torchtpu-scanner, else
// ~/.cache/torchtpu-scanner.
func CacheHome(env Env) string {
	if v, _ := env("SCANNER_CACHE_HOME"); v != "" {
		return v
	}
	if v, _ := env("XDG_CACHE_HOME"); v != "" {
		return filepath.Join(v, "torchtpu-scanner")
	}
	return filepath.Join(home(env), ".cache", "torchtpu-scanner")
}

// validateFleet checks the fleet's settings of serve and worker.
func (c *Config) validateFleet(cmd Command) []error {
	var errs []error
	if cmd == CmdServe {
		switch c.Dispatch {
		case DispatchLocal:
		case DispatchWorkers:
			if c.WorkerToken == "" {
				errs = append(errs, errors.New("--dispatch workers needs SCANNER_WORKER_TOKEN (the workers' token; without it no worker could lease)"))
			}
		default:
			errs = append(errs, fmt.Errorf("--dispatch %q: want local or workers", c.Dispatch))
		}
		if c.LeaseTTL < fleet.MinLeaseTTL {
			errs = append(errs, fmt.Errorf("--lease-ttl %v: want at least %v", c.LeaseTTL, fleet.MinLeaseTTL))
		}
		if c.WorkerWait <= 0 {
			errs = append(errs, fmt.Errorf("--worker-wait %v: want a positive duration", c.WorkerWait))
		}
		return errs
	}
	if u, err := url.Parse(c.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--server %q: want the scanner server's http(s) URL [SCANNER_SERVER]", c.Server))
	}
	if c.WorkerToken == "" {
		errs = append(errs, errors.New("SCANNER_WORKER_TOKEN is required (the server's worker token)"))
	}
	if u, err := url.Parse(c.HubEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--hub-endpoint %q: want an http(s) URL", c.HubEndpoint))
	}
	if c.Timeout <= 0 || c.ProbeGrace <= 0 {
		errs = append(errs, errors.New("--timeout and --probe-grace must be positive"))
	}
	if c.Devices < 1 || c.Devices > 64 {
		errs = append(errs, fmt.Errorf("--devices %d: want 1 to 64", c.Devices))
	}
	if c.Mode != compat.ModeAuto {
		errs = append(errs, errors.New("--mode is the server's to plan: a worker runs each job in the mode it was leased with"))
	}
	return errs
}

// Validate checks the values that matter to cmd.
func (c *Config) Validate(cmd Command) error {
	var errs []error
	if cmd == CmdServe || cmd == CmdScan || cmd == CmdProbe {
		u, err := url.Parse(c.HubEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--hub-endpoint %q: want an http(s) URL", c.HubEndpoint))
		}
		if c.Timeout <= 0 {
			errs = append(errs, errors.New("--timeout must be positive"))
		}
	}
	if cmd == CmdProbe && (c.Devices < 1 || c.Devices > 64) {
		errs = append(errs, fmt.Errorf("--devices %d: want 1 to 64", c.Devices))
	}
	if cmd == CmdServe || cmd == CmdScan {
		if c.Limit < 1 || c.Limit > 100000 {
			errs = append(errs, fmt.Errorf("--limit %d: want 1 to 100000", c.Limit))
		}
		if !slices.Contains(Sorts, c.Sort) {
			errs = append(errs, fmt.Errorf("--sort %q: want one of %s", c.Sort, strings.Join(Sorts, ", ")))
		}
		switch c.Source {
		case "hub", "cache":
		default:
			errs = append(errs, fmt.Errorf("--source %q: want hub or cache", c.Source))
		}
		if c.Devices < 1 || c.Devices > 64 {
			errs = append(errs, fmt.Errorf("--devices %d: want 1 to 64", c.Devices))
		}
		if c.ScanTimeout <= 0 {
			errs = append(errs, errors.New("--scan-timeout must be positive"))
		}
	}
	if cmd == CmdServe {
		if c.IPv6ClientPrefix < MinIPv6ClientPrefix || c.IPv6ClientPrefix > 128 {
			errs = append(errs, fmt.Errorf("--ipv6-client-prefix %d: want %d to 128 (64 counts a /64 as one client)", c.IPv6ClientPrefix, MinIPv6ClientPrefix))
		}
		for _, p := range c.TrustedProxies {
			if !validProxy(p) {
				errs = append(errs, fmt.Errorf("--trusted-proxies %q: want an IP address or a CIDR such as 10.0.0.0/8", p))
			}
		}
	}
	if cmd == CmdServe && !c.NoSchedule {
		if _, err := cron.ParseStandard(c.Schedule); err != nil {
			errs = append(errs, fmt.Errorf("--schedule %q: %w", c.Schedule, err))
		}
	}
	if cmd == CmdCheck && c.Server == "" {
		errs = append(errs, errors.New("--server is required (the scanner's URL)"))
	}
	if cmd == CmdCheck && c.Since != "" {
		if _, err := compat.ParseRuntimeKey(c.Since); err != nil {
			errs = append(errs, fmt.Errorf("--since: %w", err))
		}
	}
	if cmd == CmdCheck {
		switch c.CheckMode {
		case CheckInference, "":
		case CheckTrain, CheckServe:
			if c.Since != "" {
				errs = append(errs, fmt.Errorf("--since gates on the inference verdict's changes: not with --mode %s", c.CheckMode))
			}
		default:
			errs = append(errs, fmt.Errorf("--mode %q: want %s, %s or %s", c.CheckMode, CheckInference, CheckTrain, CheckServe))
		}
	}
	if cmd == CmdServe || cmd == CmdWorker {
		errs = append(errs, c.validateFleet(cmd)...)
	}
	if cmd == CmdServe {
		errs = append(errs, c.validateWatch()...)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	return errors.Join(errs...)
}

// validProxy reports whether p is an IP address or a CIDR.
func validProxy(p string) bool {
	if _, err := netip.ParsePrefix(p); err == nil {
		return true
	}
	_, err := netip.ParseAddr(p)
	return err == nil
}

// The verdicts `scanner check --mode` gates on.
const (
	CheckInference = "inference" // the model's status (the default)
	CheckTrain     = "train"     // the train step's verdict (Result.Modes["train"])
	CheckServe     = "serve"     // the serving cell (Model.serving: vLLM-TorchTPU)
)

// sizeUnits are the units --device-memory takes (binary, and decimal).
var sizeUnits = []struct {
	suffix string
	bytes  float64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1},
}

// maxSize bounds a size: 1 PiB, beyond any device's memory.
const maxSize = 1 << 50

// ParseSize reads a memory size: a number with a unit (48MiB, 1.5GiB,
// 64KiB, 2GB; B for bytes) or plain bytes; it must be positive and at most
// 1 PiB.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.bytes
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || v*mult > maxSize || v*mult < 1 {
		return 0, fmt.Errorf("size %q: want a positive size such as 48MiB or 30GiB, at most 1 PiB", s)
	}
	return int64(v * mult), nil
}
