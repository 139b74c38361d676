package harness

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestTaskTable checks the one task table (tasks.json, read by the
// harness too) and that it answers for the tasks the project promises,
// written out here independently of the file.
func TestTaskTable(t *testing.T) {
	if _, err := parseTasks(tasksJSON); err != nil {
		t.Fatal(err)
	}
	promised := []string{
		// text
		"text-generation", "feature-extraction", "fill-mask", "sentence-similarity", "text-classification",
		"token-classification", "question-answering", "zero-shot-classification", "text-ranking",
		"text2text-generation", "translation", "summarization", "multiple-choice", "table-question-answering",
		"time-series-forecasting",
		// vision-language
		"image-text-to-text", "image-to-text", "visual-question-answering", "document-question-answering",
		"video-text-to-text", "visual-document-retrieval", "any-to-any",
		// contrastive and detection
		"zero-shot-image-classification", "zero-shot-object-detection", "object-detection", "image-segmentation",
		"mask-generation", "depth-estimation", "keypoint-detection", "image-to-image",
		// vision, audio and video
		"image-classification", "image-feature-extraction", "automatic-speech-recognition", "audio-classification",
		"text-to-audio", "text-to-speech", "audio-text-to-text", "audio-to-audio", "video-classification",
	}
	for _, tag := range promised {
		if !SupportedTask(tag, nil) {
			t.Errorf("%s: not supported", tag)
		}
	}
	for _, tag := range []string{"text-to-image", "tabular-regression", "voice-activity-detection", "graph-ml"} {
		if SupportedTask(tag, nil) || UnsupportedWhy(tag) == "" {
			t.Errorf("%s: want unsupported with a reason, got supported=%v why=%q", tag, SupportedTask(tag, nil), UnsupportedWhy(tag))
		}
	}
	if !slices.IsSorted(SupportedTasks()) || len(SupportedTasks()) != len(Tasks.Tasks) {
		t.Errorf("SupportedTasks() = %v", SupportedTasks())
	}
}

// TestTaskTableRejects: a table that contradicts itself does not load.
func TestTaskTableRejects(t *testing.T) {
	for name, tc := range map[string]struct{ json, want string }{
		"unknown family":                 {`{"tasks": {"a": {"family": "nope"}}, "families": {}, "arch_suffixes": [["Model", "a"]]}`, `family "nope"`},
		"suffix to an unsupported task":  {`{"tasks": {"a": {"family": "f"}}, "families": {"f": {}}, "arch_suffixes": [["Model", "b"]]}`, `arch suffix "Model"`},
		"both supported and unsupported": {`{"tasks": {"a": {"family": "f"}}, "families": {"f": {}}, "arch_suffixes": [["Model", "a"]], "unsupported": {"a": "why"}}`, "both supported and unsupported"},
		"empty":                          {`{}`, "no tasks"},
		"not JSON":                       {`{`, "tasks.json"},
	} {
		_, err := parseTasks([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}

// TestTaskTableKindsAreNumericsKinds: every output a family compares has a
// kind that numerics.json (the bounds) defines.
func TestTaskTableKindsAreNumericsKinds(t *testing.T) {
	var num struct {
		Kinds map[string]json.RawMessage `json:"kinds"`
	}
	if err := json.Unmarshal(numericsJSON, &num); err != nil {
		t.Fatal(err)
	}
	n := 0
	for fam, spec := range Tasks.Families {
		for _, out := range spec.Outputs {
			n++
			if _, ok := num.Kinds[out[1]]; !ok {
				t.Errorf("family %s output %s: kind %q is not in numerics.json", fam, out[0], out[1])
			}
		}
	}
	if n < len(Tasks.Families) {
		t.Errorf("only %d outputs over %d families", n, len(Tasks.Families))
	}
}

func TestNumericsTable(t *testing.T) {
	if _, err := parseNumerics(numericsJSON); err != nil {
		t.Fatal(err)
	}
	// bfloat16 is held to looser bounds than float32, never tighter.
	f32, bf16 := Numerics.Dtypes["float32"], Numerics.Dtypes["bfloat16"]
	if !(bf16.Atol >= f32.Atol && bf16.RelError >= f32.RelError && bf16.Cosine <= f32.Cosine && bf16.Top1 <= f32.Top1) {
		t.Errorf("bfloat16 %+v is not looser than float32 %+v", bf16, f32)
	}
	for name, tc := range map[string]struct{ json, want string }{
		"missing dtype": {`{"dtypes": {}, "kinds": {"k": {"checks": ["max_abs"]}}}`, "dtype float32"},
		"unknown check": {`{"dtypes": {"float32": {"atol": 1, "rtol": 1, "top1": 1, "rel_error": 1, "cosine": 1}, "float16": {"atol": 1, "rtol": 1, "top1": 1, "rel_error": 1, "cosine": 1}, "bfloat16": {"atol": 1, "rtol": 1, "top1": 1, "rel_error": 1, "cosine": 1}}, "kinds": {"k": {"checks": ["max_abs", "vibes"]}}}`, `unknown check "vibes"`},
	} {
		if _, err := parseNumerics([]byte(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}

func TestSupportedTask(t *testing.T) {
	tests := []struct {
		tag   string
		archs []string
		want  bool
	}{
		{"text-generation", nil, true},
		{"feature-extraction", nil, true},
		{"automatic-speech-recognition", []string{"WhisperForConditionalGeneration"}, true},
		{"image-feature-extraction", nil, true},
		{"zero-shot-image-classification", []string{"CLIPModel"}, true},
		{"image-text-to-text", []string{"Qwen2_5_VLForConditionalGeneration"}, true},
		{"text-to-image", nil, false},
		{"tabular-classification", nil, false},
		{"text-ranking", []string{"BertForSequenceClassification"}, true},
		{"question-answering", nil, true},
		{"", []string{"GPT2LMHeadModel"}, true},
		{"", []string{"BertModel"}, true},
		{"", []string{"ElectraForPreTraining"}, true},
		{"", []string{"Wav2Vec2ForCTC"}, true},
		{"", []string{"T5ForConditionalGeneration"}, true},
		{"", []string{"ViTForImageClassification"}, true},
		{"", []string{"Model"}, false},
		{"", []string{"DetrForObjectDetection"}, true},
		{"", []string{"CLIPModel"}, true},
		{"", []string{"SamModel"}, true},
		{"", []string{"PatchTSTForPrediction"}, true},
		{"", []string{"Florence2ForConditionalGeneration"}, true},
		{"", []string{"SomethingWeird"}, false},
		{"", []string{"StableDiffusionSafetyChecker"}, false},
		{"", nil, false},
	}
	for _, tc := range tests {
		if got := SupportedTask(tc.tag, tc.archs); got != tc.want {
			t.Errorf("SupportedTask(%q, %v) = %v, want %v", tc.tag, tc.archs, got, tc.want)
		}
	}
}

// TestTaskExamples: the task rule (SupportedTask, then ConfigRefusal on
// config.json) answers tasks.json's worked examples, which the Python test
// checks against harness_tasks.task_support too, so the scanner's
// preflight and the harness say the same of each.
func TestTaskExamples(t *testing.T) {
	if len(Tasks.TaskExamples) < 10 {
		t.Fatalf("only %d task examples", len(Tasks.TaskExamples))
	}
	refused := 0
	for _, ex := range Tasks.TaskExamples {
		why := ConfigRefusal(ex.Tag, ex.Architectures, ex.Config)
		if why != "" {
			refused++
		}
		if got := SupportedTask(ex.Tag, ex.Architectures) && why == ""; got != ex.Supported {
			t.Errorf("tag %q, architectures %v, config %v: supported %v (refusal %q), tasks.json's example says %v",
				ex.Tag, ex.Architectures, ex.Config, got, why, ex.Supported)
		}
	}
	if refused < 2 {
		t.Errorf("only %d examples refused by their config: the examples do not reach ConfigRefusal", refused)
	}
}

// TestConfigRefusal: a family's requirement is met by a model type or by
// a key with a value other than null and false; without a config, or for
// a task that is not supported, there is nothing to refuse.
func TestConfigRefusal(t *testing.T) {
	for _, tc := range []struct {
		tag    string
		config map[string]any
		refuse string // a part of the refusal; "" for none
	}{
		{"table-question-answering", map[string]any{"model_type": "tapas"}, ""},
		{"table-question-answering", map[string]any{"model_type": "bart", "is_encoder_decoder": true}, ""},
		{"table-question-answering", map[string]any{"model_type": "bart", "is_encoder_decoder": false}, `table-question-answering model of type "bart": TAPAS`},
		{"table-question-answering", map[string]any{"model_type": "x", "is_encoder_decoder": nil}, "TAPAS"},
		{"audio-to-audio", map[string]any{"model_type": "dac", "codebook_dim": 8}, ""},
		{"audio-to-audio", map[string]any{"model_type": "xcodec2", "quantization_levels": []any{4, 4}}, ""},
		{"audio-to-audio", map[string]any{"model_type": "sepformer"}, "not an audio codec"},
		{"audio-to-audio", nil, ""},
		{"text-generation", map[string]any{"model_type": "llama"}, ""},
		{"text-to-image", map[string]any{"model_type": "x"}, ""},
	} {
		got := ConfigRefusal(tc.tag, nil, tc.config)
		if (tc.refuse == "") != (got == "") || !strings.Contains(got, tc.refuse) {
			t.Errorf("ConfigRefusal(%q, %v) = %q, want %q", tc.tag, tc.config, got, tc.refuse)
		}
	}
	// Without a tag, the task comes from the architectures.
	if got := ConfigRefusal("", []string{"TapasForQuestionAnswering"}, map[string]any{"model_type": "tapas"}); got != "" {
		t.Errorf("tagless TAPAS: %q", got)
	}
}
