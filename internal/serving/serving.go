// Package serving answers "can I `vllm serve` this model on a TPU?" from
// what vLLM-TorchTPU declares: the model registry of the vLLM that the
// pinned vllm-torchtpu release carries (a table from config.json's
// architecture names to vLLM's implementations), read from its wheel
// without importing it (wheel.go). It is the one owner of the pin
// (Package, Version), of which registry table means which kind of model
// (compat.ServingKinds), and of a model's serving cell (Declare): served or not, as what,
// and the command that would serve it. Everything here is pure but the
// wheel's fetch and read.
package serving

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/readiness"
)

// The pinned release: the one place its name and version are written.
const (
	Package = "vllm-torchtpu"
	Version = "0.29.0"
)

// tableKinds says which registry table (a dict of vllm's
// model_executor/models/registry.py) declares which kind. A table not
// named here is not a way to serve a model on its own: speculative-decoding
// drafts, vLLM's own Transformers-backend class names, the removed and the
// out-of-tree lists, and _VLLM_MODELS (the union of the others).
var tableKinds = map[string]compat.ServingKind{
	"_TEXT_GENERATION_MODELS":         compat.ServingGeneration,
	"_MULTIMODAL_MODELS":              compat.ServingMultimodal,
	"_EMBEDDING_MODELS":               compat.ServingPooling,
	"_LATE_INTERACTION_MODELS":        compat.ServingPooling,
	"_REWARD_MODELS":                  compat.ServingPooling,
	"_TOKEN_CLASSIFICATION_MODELS":    compat.ServingPooling,
	"_SEQUENCE_CLASSIFICATION_MODELS": compat.ServingPooling,
	"_TRANSFORMERS_SUPPORTED_MODELS":  "", // by class: see transformersKind
}

// transformersKind is the kind of an architecture vLLM serves through its
// Transformers backend: the backend class says (Transformers…ForCausalLM
// generates, TransformersMultiModal… takes images, …EmbeddingModel and
// …ForSequenceClassification pool).
func transformersKind(class string) compat.ServingKind {
	switch {
	case strings.Contains(class, "Embedding") || strings.Contains(class, "Classification"):
		return compat.ServingPooling
	case strings.Contains(class, "MultiModal"):
		return compat.ServingMultimodal
	}
	return compat.ServingGeneration
}

// Registry is what one vllm-torchtpu release declares: the kind of each
// architecture its vLLM serves.
type Registry struct {
	Version     string                        // vllm-torchtpu's version
	VLLMVersion string                        // the vLLM it carries ("" when the wheel does not say)
	Archs       map[string]compat.ServingKind // architecture → kind
}

// Entry is one row of a registry table: the architecture, and the module
// and class that implement it.
type Entry struct {
	Arch, Module, Class string
}

// FromTables builds a Registry from the tables read out of the wheel. It
// fails when a table that declares a kind is missing or the registry is
// empty: a vLLM that renamed its tables must be looked at, not read as
// serving nothing.
func FromTables(version, vllmVersion string, tables map[string][]Entry) (Registry, error) {
	r := Registry{Version: version, VLLMVersion: vllmVersion, Archs: map[string]compat.ServingKind{}}
	rank := func(k compat.ServingKind) int { return slices.Index(compat.ServingKinds, k) }
	for name, fixed := range tableKinds {
		rows, ok := tables[name]
		if !ok {
			return Registry{}, fmt.Errorf("serving: %s %s: vLLM's registry has no %s", Package, version, name)
		}
		for _, e := range rows {
			k := fixed
			if k == "" {
				k = transformersKind(e.Class)
			}
			if old, ok := r.Archs[e.Arch]; !ok || rank(k) < rank(old) {
				r.Archs[e.Arch] = k
			}
		}
	}
	if len(r.Archs) == 0 {
		return Registry{}, fmt.Errorf("serving: %s %s: vLLM's registry lists no architecture", Package, version)
	}
	return r, nil
}

// CommandGeneration is the TPU generation compat.ServingCell.Command is written for (the
// table's chips column counts the same).
const CommandGeneration = "v6e"

// TensorParallel is vLLM's --tensor-parallel-size for a model that needs
// minDevices devices: the smallest power of two at least that large (at
// most 2^20, a guard: no host comes near).
// vLLM splits the attention heads evenly over the ranks, and head counts
// are multiples of powers of two; TPU hosts hold 1, 4 or 8 chips.
func TensorParallel(minDevices int) int {
	n := 1
	for n < minDevices && n < 1<<20 {
		n *= 2
	}
	return n
}

// Declare is model id's serving cell: whether reg lists one of its
// architectures (archs, from config.json, in order; the first listed
// decides), and the command that would serve it, sized by its readiness
// (nil when not computed). ok is false when nothing can be said: no
// architectures known.
func Declare(reg Registry, id string, archs []string, r *readiness.Readiness) (compat.ServingCell, bool) {
	if len(archs) == 0 {
		return compat.ServingCell{}, false
	}
	c := compat.ServingCell{Evidence: compat.ServingEvidenceDeclared, Package: Package, Version: reg.Version, VLLMVersion: reg.VLLMVersion,
		Architectures: slices.Clone(archs), TensorParallelSize: map[string]int{}}
	for _, a := range archs {
		if k, ok := reg.Archs[a]; ok {
			c.Served, c.Kind, c.Architecture = true, &k, &a
			break
		}
	}
	if r != nil {
		for g, n := range r.MinDevices {
			c.TensorParallelSize[g] = TensorParallel(n)
		}
		c.MaxModelLen = r.ContextTokens
	}
	if c.Served {
		cmd := Command(id, c.TensorParallelSize[CommandGeneration], c.MaxModelLen, moe(r))
		c.Command = &cmd
	}
	return c, true
}

// moe says readiness found a mixture of experts.
func moe(r *readiness.Readiness) bool {
	if r == nil {
		return false
	}
	return slices.ContainsFunc(r.Hints, func(h readiness.Hint) bool { return h.Code == readiness.HintMoEDynamicRouting })
}

// Command is the `vllm serve` line for a model: --tensor-parallel-size
// when tp is known (over 0), --max-model-len when maxLen is known, and
// --enable-expert-parallel for a mixture of experts on 8 chips or more
// (its experts spread over the chips instead of each split).
func Command(id string, tp int, maxLen *int64, moe bool) string {
	s := "vllm serve " + id
	if tp > 0 {
		s += " --tensor-parallel-size " + strconv.Itoa(tp)
	}
	if maxLen != nil {
		s += " --max-model-len " + strconv.FormatInt(*maxLen, 10)
	}
	if moe && tp >= 8 {
		s += " --enable-expert-parallel"
	}
	return s
}
