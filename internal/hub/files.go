package hub

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/harness"
)

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// validateCommit reports whether sha is a full, lower-case git commit id, so
// that a download is pinned to one immutable revision (never a branch).
func validateCommit(sha string) error {
	if !commitRE.MatchString(sha) {
		return fmt.Errorf("hub: revision %q is not a full commit sha (40 lower-case hex digits)", sha)
	}
	return nil
}

// validateFilename reports whether name is a safe repo-relative path: slash
// separated, not absolute, no empty, "." or ".." segment, no backslash, no
// control character, no hidden (dot) file or folder. huggingface_hub rejects
// the same escapes (_validate_relative_filename); hidden files are never
// needed to load a model, so they are refused too.
func validateFilename(name string) error {
	if name == "" || len(name) > 1024 {
		return fmt.Errorf("hub: file name %q: empty or too long", name)
	}
	if strings.ContainsAny(name, "\\:") || strings.HasPrefix(name, "/") {
		return fmt.Errorf("hub: file name %q: not a relative slash-separated path", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("hub: file name %q: control character", name)
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
			return fmt.Errorf("hub: file name %q: empty, dot or hidden path segment", name)
		}
	}
	return nil
}

// allowedNames are the exact base names AllowedFile accepts besides the
// patterns below: tokenizer, processor and sentence-transformers files.
var allowedNames = map[string]bool{
	"vocab.txt":                 true,
	"vocab.json":                true,
	"merges.txt":                true,
	"special_tokens_map.json":   true,
	"added_tokens.json":         true,
	"chat_template.json":        true,
	"chat_template.jinja":       true,
	"modules.json":              true,
	"sentence_bert_config.json": true,
	// SentencePiece models are protobuf, not pickle: loading one runs no code.
	"tokenizer.model":         true,
	"spiece.model":            true,
	"sentencepiece.model":     true,
	"sentencepiece.bpe.model": true,
}

// AllowedFile reports whether the scanner may download the repo file name.
//
// The allowlist is what a safetensors checkpoint needs to load, and nothing
// that can execute code when loaded:
//
//   - configuration: "*config*.json" (config.json, generation_config.json,
//     tokenizer_config.json, preprocessor_config.json, processor_config.json,
//     sentence-transformers' config_sentence_transformers.json, ...);
//   - tokenizers: "tokenizer*.json", vocab.txt, vocab.json, merges.txt,
//     special_tokens_map.json, added_tokens.json, chat templates, "*.tiktoken"
//     (text), and SentencePiece models ("*.model": tokenizer.model,
//     spiece.model, sentencepiece.bpe.model; protobuf, not pickle);
//   - weights: "*.safetensors" and their "*.safetensors.index.json".
//
// Pickle-based or executable formats (.bin, .pt, .pth, .pkl, .ckpt, .h5,
// .msgpack, .npy, .onnx, .py, ...) are never allowed. Files in sub-folders
// (1_Pooling/config.json) are allowed when their base name is; hidden files
// and unsafe paths (see validateFilename) are not.
func AllowedFile(name string) bool {
	if validateFilename(name) != nil {
		return false
	}
	base := path.Base(name)
	lower := strings.ToLower(base)
	switch {
	case allowedNames[lower]:
		return true
	case strings.HasSuffix(lower, ".safetensors"), strings.HasSuffix(lower, ".safetensors.index.json"):
		return true
	case strings.HasSuffix(lower, ".json") && (strings.Contains(lower, "config") || strings.HasPrefix(lower, "tokenizer")):
		return true
	case strings.HasSuffix(lower, ".tiktoken"):
		return true
	case strings.HasSuffix(lower, ".model") && lower != ".model":
		// SentencePiece models are protobuf: loading one runs no code.
		return true
	}
	return false
}

// Caps per kind of file, besides the input files' (harness.InputFileCap):
// no configuration or index is anywhere near these sizes, so a larger one
// is not what it claims to be. Weights have no cap of their kind: the
// client's MaxFileBytes and MaxModelBytes bound them.
const (
	maxIndexBytes = 64 << 20 // *.safetensors.index.json (tens of thousands of tensors)
	maxJSONBytes  = 4 << 20  // config.json and other JSON (the largest real configs, id2label of 21k classes, are under 1 MiB)
	maxTextBytes  = 32 << 20 // *.tiktoken vocabularies, and any other file not in the table
)

// FileCap is the most bytes the scanner downloads of the repo file name,
// by its kind: a tokenizer or processor file has its cap from the table
// the harness reads too (internal/harness/input_files.json: a few
// MiB for JSON settings, more for tokenizer.json, vocabularies and
// SentencePiece models), by its base name wherever it is; an index or
// other JSON has a cap of its own, and so has every other file but the
// weights, which are bounded only by the client's MaxFileBytes. Download
// applies the smaller of FileCap and MaxFileBytes to every file; files
// read whole are read within it (ReadCapped).
func FileCap(name string) int64 {
	if c, ok := harness.InputFileCap(path.Base(name)); ok {
		return c
	}
	lower := strings.ToLower(path.Base(name))
	switch {
	case IsWeightFile(lower):
		return math.MaxInt64
	case strings.HasSuffix(lower, ".safetensors.index.json"):
		return maxIndexBytes
	case strings.HasSuffix(lower, ".json"):
		return maxJSONBytes
	}
	return maxTextBytes
}

// InputFiles picks the tokenizer and processor files out of a repo's files:
// the top-level files of the table the harness reads
// (internal/harness/input_files.json) that AllowedFile accepts, in
// listing order. A full-mode probe builds real inputs from them; each is
// optional (the probe falls back to synthetic inputs without it).
func InputFiles(siblings []Sibling) []string {
	var files []string
	for _, s := range siblings {
		if _, ok := harness.InputFileCap(s.Name); ok && AllowedFile(s.Name) {
			files = append(files, s.Name)
		}
	}
	return files
}

var shardRE = regexp.MustCompile(`^model-\d+-of-\d+\.safetensors$`)

// IsCheckpoint reports whether a file name is part of a transformers
// safetensors checkpoint: model.safetensors or one of its shards
// (model-00001-of-00002.safetensors), what from_pretrained loads.
func IsCheckpoint(name string) bool {
	return name == "model.safetensors" || shardRE.MatchString(name)
}

// WeightFiles picks the safetensors checkpoint out of a repo's files and
// returns the file names (weights plus their index) with their total size.
//
// Only top-level files count (sub-folders hold other variants: onnx/, fp16/,
// checkpoint-500/). When transformers' own names are present (model.safetensors
// or model-00001-of-00002.safetensors shards) only those are taken, so a repo
// that also carries, say, Mistral's consolidated.safetensors is not
// downloaded twice; otherwise every top-level *.safetensors is taken
// (diffusion_pytorch_model.safetensors, adapter_model.safetensors, ...).
//
// total is only as good as the siblings' sizes: listings carry names only
// (ModelInfo.FilesMetadata false), so total is 0 there; use Client.ModelInfo
// for sizes. files is nil when the repo has no safetensors weights.
func WeightFiles(siblings []Sibling) (files []string, total int64) {
	var transformers, others []Sibling
	var index []Sibling
	for _, s := range siblings {
		if strings.Contains(s.Name, "/") || !AllowedFile(s.Name) {
			continue
		}
		switch {
		case IsCheckpoint(s.Name):
			transformers = append(transformers, s)
		case strings.HasSuffix(s.Name, ".safetensors.index.json"):
			index = append(index, s)
		case strings.HasSuffix(s.Name, ".safetensors"):
			others = append(others, s)
		}
	}
	pick := others
	if len(transformers) > 0 {
		pick = transformers
	}
	if len(pick) == 0 {
		return nil, 0
	}
	for _, ix := range index {
		if len(transformers) > 0 && ix.Name != "model.safetensors.index.json" {
			continue
		}
		pick = append(pick, ix)
	}
	for _, s := range pick {
		files = append(files, s.Name)
		total += s.Size
	}
	return files, total
}
