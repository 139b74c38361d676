// Package preflight decides, before any probe, whether a model is worth
// probing: gated, custom code, other libraries, tasks the harness does not
// test, a broken config.json. It is a pure rule over the tables the harness
// reads too (internal/harness); a scan asks it of every listed model, and
// the front desk of test requests (internal/requests) of every request.
package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
)

// Candidate is what the scanner knows about a model before probing it:
// its Hub listing, its config.json and its weight files.
type Candidate struct {
	ID, Revision string
	Task         string   // Hub pipeline_tag, "" when the Hub has none
	Library      string   // Hub library_name, "" when the Hub has none
	Tags         []string // Hub tags ("custom_code", "safetensors", ...)
	Gated        bool     // the repository is gated
	HasToken     bool     // the scanner has a token (assumed to have access)
	Disabled     bool     // an operator turned this model off
	// Config is the parsed config.json, nil when the repository has none.
	Config map[string]any
	// ConfigErr is set when config.json exists but cannot be read or is not
	// a JSON object. An error wrapping fs.ErrNotExist counts as "no
	// config.json", not as the model's fault.
	ConfigErr error
	// ConfigRead: Config is the whole config.json, read from the snapshot,
	// not the listing's excerpt (which lacks the keys a task's family may
	// require: harness.ConfigRefusal applies only then).
	ConfigRead bool
	// Mode is recorded in a declined Result (when full or arch). Whether
	// the weights exist and fit is the plan's to say (scan.Plan), not
	// preflight's.
	Mode compat.Mode
	// Target, when set, is recorded in a declined Result (with Repro);
	// else the caller fills both.
	Target compat.Target
}

// Listed is what preflight can know of a model from its Hub
// listing alone: its tags, library, gating and the listing's excerpt of
// config.json (the scan adds the mode, and config.json once downloaded).
func Listed(m hub.ModelInfo, hasToken bool) Candidate {
	return Candidate{
		ID: m.ID, Revision: m.SHA, Task: m.PipelineTag, Library: m.Library, Tags: m.Tags,
		Gated: m.Gated, HasToken: hasToken, Disabled: m.Disabled, Config: m.Config,
	}
}

// Preflight decides whether a model is worth probing. It returns nil to go
// ahead, or the Result that stands instead: status skipped with a reason,
// or status fail (stage config, failure_class config_error) when the
// model's config.json is broken. Rules, in order:
//
//  1. disabled by an operator → disabled
//  2. gated and no token → gated
//  3. a tag of harness.RemoteCode (custom_code) → remote_code
//  4. library (harness.TransformersModel, the libraries of tasks.json):
//     transformers, or sentence-transformers with a config.json that has
//     a model_type; a model without library_name counts as transformers
//     when its config.json has a model_type → else unsupported_library
//  5. config.json present but not a JSON object → fail/config_error
//  6. config.json with a key of harness.RemoteCode (auto_map) → remote_code,
//     whatever its model_type (the harness applies the same table)
//  7. harness.SupportedTask(tag, architectures) false → unsupported_task
//  8. with the whole config.json (ConfigRead), harness.ConfigRefusal: a
//     tagless decoder-only ...ForConditionalGeneration without towers that
//     transformers' mappings do not list, or a task whose family requires
//     a model type or key the config lacks → unsupported_task
//
// A --mode full that cannot run (no_safetensors, too_large) is declined by
// the scan's plan (scan.Plan), after these rules.
func Preflight(c Candidate) *compat.Result {
	configBroken := c.ConfigErr != nil && !errors.Is(c.ConfigErr, fs.ErrNotExist)
	config := c.Config
	if configBroken {
		config = nil
	}
	modelType, _ := config["model_type"].(string)

	switch {
	case c.Disabled:
		return skipped(c, compat.ReasonDisabled, "disabled by the scanner's operator")
	case c.Gated && !c.HasToken:
		return skipped(c, compat.ReasonGated, "gated on the Hub and the scanner has no token to accept its terms with")
	case harness.RemoteCode.Tag(c.Tags) != "":
		return remoteCode(c, harness.RemoteCode.Why(c.Tags, nil))
	}

	switch lib := c.Library; {
	case harness.TransformersModel(lib, modelType != "" || configBroken):
	case lib == "":
		return skipped(c, compat.ReasonUnsupportedLibrary, "no library_name on the Hub and no config.json with a model_type: not a transformers model")
	default:
		return skipped(c, compat.ReasonUnsupportedLibrary, fmt.Sprintf("library %q is not transformers; the harness only loads transformers models", lib))
	}

	if configBroken {
		res := declined(c, compat.StatusFail)
		res.Stage = compat.Ptr(compat.StageConfig)
		res.FailureClass = compat.Ptr(compat.ClassConfigError)
		res.Message = compat.Ptr("config.json is not a valid JSON object: " + c.ConfigErr.Error())
		res.Signature = compat.Ptr("config_error:config.json")
		return res
	}
	if why := harness.RemoteCode.Why(nil, config); why != "" {
		return remoteCode(c, why)
	}
	if archs := architectures(config); !harness.SupportedTask(c.Task, archs) {
		if why := harness.UnsupportedWhy(c.Task); why != "" {
			return skipped(c, compat.ReasonUnsupportedTask, fmt.Sprintf("pipeline tag %q is not one the harness tests: %s", c.Task, why))
		}
		if c.Task != "" {
			return skipped(c, compat.ReasonUnsupportedTask, fmt.Sprintf("pipeline tag %q is not one the harness tests (supported: %s)", c.Task, strings.Join(harness.SupportedTasks(), ", ")))
		}
		return skipped(c, compat.ReasonUnsupportedTask, fmt.Sprintf("no pipeline tag, and no architecture the harness knows a task for (architectures: %s)", listOrNone(archs)))
	}
	if why := harness.ConfigRefusal(c.Task, architectures(config), config); c.ConfigRead && why != "" {
		return skipped(c, compat.ReasonUnsupportedTask, "not one the harness tests: "+why)
	}
	return nil
}

// ParseConfig parses a config.json the way Preflight expects it: a JSON
// object, else an error for Candidate.ConfigErr.
func ParseConfig(data []byte) (map[string]any, error) {
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if cfg == nil {
		return nil, errors.New("config.json: null, not an object")
	}
	return cfg, nil
}

// ReadConfig reads and parses config.json, never past its cap (a cache
// filled by other tools may hold anything).
func ReadConfig(path string) (map[string]any, error) {
	b, err := hub.ReadCapped(path, "config.json")
	if err != nil {
		return nil, fmt.Errorf("read config.json: %w", err)
	}
	return ParseConfig(b)
}

// architectures reads config.json's "architectures" list.
func architectures(config map[string]any) []string {
	raw, _ := config["architectures"].([]any)
	var out []string
	for _, a := range raw {
		if s, ok := a.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// remoteCode is the skip of a model that needs code from its repository.
func remoteCode(c Candidate, why string) *compat.Result {
	return skipped(c, compat.ReasonRemoteCode, why+": it needs trust_remote_code, and the scanner runs no code from model repositories")
}

// skipped is a preflight result with status skipped.
func skipped(c Candidate, reason compat.Reason, msg string) *compat.Result {
	res := declined(c, compat.StatusSkipped)
	res.Reason = compat.Ptr(reason)
	res.Message = compat.Ptr(msg)
	return res
}

// declined is the common part of a preflight result.
func declined(c Candidate, status compat.Status) *compat.Result {
	res := &compat.Result{
		Status:   status,
		Revision: c.Revision,
		TestedAt: time.Now().UTC(),
		Task:     c.Task,
	}
	if c.Mode == compat.ModeFull || c.Mode == compat.ModeArch {
		res.Mode = compat.Ptr(c.Mode)
	}
	if c.Target != "" && c.Target != compat.TargetAuto {
		res.Target = c.Target
		mode := c.Mode
		if mode == "" {
			mode = compat.ModeAuto
		}
		res.Repro = compat.Repro(c.ID, c.Revision, c.Target, mode)
	}
	return res
}

// ListingDecides reports whether a preflight verdict made from the listing
// alone stands, or needs config.json (which may say otherwise) first.
func ListingDecides(res compat.Result, m hub.ModelInfo) bool {
	if res.Status != compat.StatusSkipped || res.Reason == nil {
		return false
	}
	switch *res.Reason {
	case compat.ReasonGated, compat.ReasonDisabled, compat.ReasonRemoteCode:
		return true
	case compat.ReasonUnsupportedLibrary:
		// a library that passes with a model_type (sentence-transformers, or
		// none) waits for config.json, which alone may tell.
		return m.Library != "" && harness.ListingTellsLibrary(m.Library, m.Config != nil)
	case compat.ReasonUnsupportedTask:
		return m.PipelineTag != "" || m.Config != nil
	}
	return false
}
