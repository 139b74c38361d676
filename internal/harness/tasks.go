package harness

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TaskTable is tasks.json: the one task table of the project. The
// harness reads the same file (harness_tasks.py), so preflight, the
// coverage figure and the harness cannot disagree on which pipeline tags
// are tested. The file's "about" says what each part means.
type TaskTable struct {
	Tasks    map[string]TaskSpec   `json:"tasks"`
	Families map[string]FamilySpec `json:"families"`
	// ArchSuffixes maps a model without a pipeline tag to a task by the
	// ending of its config.json architectures[0], first match wins.
	ArchSuffixes [][2]string `json:"arch_suffixes"`
	// MappedArchitectures are the architectures transformers' own model
	// mappings list (which the harness asks first) whose task the
	// suffixes alone would not give, with that task: read before them.
	MappedArchitectures map[string]string `json:"mapped_architectures"`
	// ConditionalGeneration is what config.json must have for a
	// ...ForConditionalGeneration not mapped to have a task (ConfigRefusal).
	ConditionalGeneration Requirement `json:"conditional_generation"`
	// Unsupported are the pipeline tags transformers has no model class
	// for, with why (the methodology page lists them).
	Unsupported map[string]string `json:"unsupported"`
	// Libraries are the Hub library names the harness loads ("" for a
	// model without one), and whether config.json must have a model_type.
	Libraries map[string]LibrarySpec `json:"libraries"`
	// LibraryExamples are worked answers of the library rule, checked by
	// the Go and the Python tests alike.
	LibraryExamples []LibraryExample `json:"library_examples"`
	TaskExamples    []TaskExample    `json:"task_examples"`
}

// LibrarySpec is one library the harness loads.
type LibrarySpec struct {
	// NeedsModelType: a model of this library is a transformers model only
	// when its config.json has a model_type.
	NeedsModelType bool `json:"needs_model_type"`
}

// LibraryExample is one worked answer of TransformersModel.
type LibraryExample struct {
	Library   string `json:"library"`
	ModelType bool   `json:"model_type"`
	Supported bool   `json:"supported"`
}

// TaskSpec is one supported pipeline tag.
type TaskSpec struct {
	Family string `json:"family"`
}

// FamilySpec is one family of inputs and outputs.
type FamilySpec struct {
	Generate bool `json:"generate"`
	// Outputs are [name, kind] pairs: the model outputs compared with the
	// CPU reference, the first present being the primary one; the kinds
	// are numerics.json's.
	Outputs [][2]string `json:"outputs"`
	Inputs  string      `json:"inputs"`
	// Requires, when set, is what config.json must have for a model of
	// the family to be tested (ConfigRefusal).
	Requires *Requirement `json:"requires"`
}

// Requirement is what a family needs of config.json: one of ModelTypes,
// or one of Keys with a value other than null and false; Why says what a
// model without it is not.
type Requirement struct {
	ModelTypes []string `json:"model_types"`
	Keys       []string `json:"keys"`
	Why        string   `json:"why"`
}

// TaskExample is one worked answer of the task rule: SupportedTask, then
// ConfigRefusal on the config, must say Supported (the Python test checks
// harness_tasks.task_support on the same).
type TaskExample struct {
	Tag           string         `json:"tag"`
	Architectures []string       `json:"architectures"`
	Config        map[string]any `json:"config"`
	Supported     bool           `json:"supported"`
}

//go:embed tasks.json
var tasksJSON []byte

// Tasks is the embedded table. A table that does not parse fails
// TestTaskTable, and panics at start-up rather than skip wrong.
var Tasks = must(parseTasks(tasksJSON))

func parseTasks(data []byte) (TaskTable, error) {
	var t TaskTable
	if err := json.Unmarshal(data, &t); err != nil {
		return t, fmt.Errorf("harness: tasks.json: %w", err)
	}
	var errs []error
	if len(t.Tasks) == 0 || len(t.ArchSuffixes) == 0 || len(t.Libraries) == 0 {
		errs = append(errs, errors.New("no tasks, no arch_suffixes or no libraries"))
	}
	for tag, spec := range t.Tasks {
		if _, ok := t.Families[spec.Family]; !ok {
			errs = append(errs, fmt.Errorf("task %s: family %q is not in families", tag, spec.Family))
		}
		if _, ok := t.Unsupported[tag]; ok {
			errs = append(errs, fmt.Errorf("task %s is both supported and unsupported", tag))
		}
	}
	for fam, spec := range t.Families {
		if r := spec.Requires; r != nil && (len(r.ModelTypes)+len(r.Keys) == 0 || r.Why == "") {
			errs = append(errs, fmt.Errorf("family %s: requires names no model_types or keys, or no why", fam))
		}
	}
	for arch, task := range t.MappedArchitectures {
		if _, ok := t.Tasks[task]; !ok {
			errs = append(errs, fmt.Errorf("mapped architecture %s: task %q is not a supported task", arch, task))
		}
	}
	if len(t.ConditionalGeneration.Keys) == 0 || t.ConditionalGeneration.Why == "" {
		errs = append(errs, errors.New("conditional_generation names no keys or no why"))
	}
	for _, s := range t.ArchSuffixes {
		if _, ok := t.Tasks[s[1]]; !ok || s[0] == "" {
			errs = append(errs, fmt.Errorf("arch suffix %q: task %q is not a supported task", s[0], s[1]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return t, fmt.Errorf("harness: tasks.json: %w", err)
	}
	return t, nil
}

// SupportedTasks lists the supported pipeline tags, sorted.
func SupportedTasks() []string {
	out := make([]string, 0, len(Tasks.Tasks))
	for t := range Tasks.Tasks {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// SupportedTask reports whether the harness can test a model with this
// Hub pipeline tag. A model without a tag ("") is decided by its
// config.json architectures[0], as the harness does: one transformers'
// mappings list (tasks.json mapped_architectures), else one ending in a
// suffix of the table (BertModel, LlavaForConditionalGeneration, ...), is
// supported, though ConfigRefusal may still refuse it by its config.json
// (a decoder-only ...ForConditionalGeneration without towers). A tag
// outside the supported set is not, whatever the architecture.
func SupportedTask(pipelineTag string, architectures []string) bool {
	task, _ := taskOf(pipelineTag, architectures)
	return task != ""
}

// taskOf is the supported task of a model: its pipeline tag when the table
// has it, else (no tag) the task transformers' mappings give its first
// architecture (mapped_architectures), else that of the first suffix of
// the table it ends with, and that suffix; "" when none.
func taskOf(pipelineTag string, architectures []string) (task, suffix string) {
	if pipelineTag != "" {
		if _, ok := Tasks.Tasks[pipelineTag]; ok {
			return pipelineTag, ""
		}
		return "", ""
	}
	if len(architectures) == 0 {
		return "", ""
	}
	a := architectures[0]
	if t, ok := Tasks.MappedArchitectures[a]; ok {
		return t, ""
	}
	for _, s := range Tasks.ArchSuffixes {
		// "Model" alone is not an architecture; "BertModel" is.
		if strings.HasSuffix(a, s[0]) && len(a) > len(s[0]) {
			return s[1], s[0]
		}
	}
	return "", ""
}

// conditionalGeneration is the suffix whose task (text2text-generation)
// holds only for a config with one of tasks.json conditional_generation's
// keys: the harness gives a decoder-only one without towers no task.
const conditionalGeneration = "ForConditionalGeneration"

// ConfigRefusal says why a model of a supported task is not tested after
// all, from its whole config.json: a model without a pipeline tag whose
// task comes from the ForConditionalGeneration suffix lacks every key of
// tasks.json "conditional_generation" (a decoder-only one without towers
// that transformers' mappings do not list: the harness knows no task for
// it), or its task's family requires a model type or a key (tasks.json
// "requires") the config lacks; "" when none,
// when the task is not supported (SupportedTask says so) or when there is
// no config. The harness applies the same table (harness_tasks.py).
func ConfigRefusal(pipelineTag string, architectures []string, config map[string]any) string {
	task, suffix := taskOf(pipelineTag, architectures)
	if task == "" || config == nil {
		return ""
	}
	if suffix == conditionalGeneration && !hasKey(config, Tasks.ConditionalGeneration.Keys) {
		return fmt.Sprintf("%s (architectures: %s)", Tasks.ConditionalGeneration.Why, strings.Join(architectures, ", "))
	}
	r := Tasks.Families[Tasks.Tasks[task].Family].Requires
	if r == nil {
		return ""
	}
	if mt, _ := config["model_type"].(string); slices.Contains(r.ModelTypes, mt) {
		return ""
	}
	if hasKey(config, r.Keys) {
		return ""
	}
	mt, _ := config["model_type"].(string)
	return fmt.Sprintf("%s model of type %q: %s", task, mt, r.Why)
}

// UnsupportedWhy says why the harness does not test a pipeline tag: the
// table's reason for a tag transformers has no model class for, else "".
func UnsupportedWhy(pipelineTag string) string {
	return Tasks.Unsupported[pipelineTag]
}

// hasKey reports whether config has one of keys with a value other than
// null and false.
func hasKey(config map[string]any, keys []string) bool {
	for _, k := range keys {
		if v, ok := config[k]; ok && v != nil && v != false {
			return true
		}
	}
	return false
}
