package probe

import (
	"regexp"
	"slices"
	"testing"
)

// TestTasksMatchHarness keeps preflight's supported pipeline tags in step
// with the harness's own table (harness_tasks.py TASK_FAMILIES): a tag
// only one side knows would be skipped wrongly, or probed into a skip.
func TestTasksMatchHarness(t *testing.T) {
	src, err := harnessFS.ReadFile("harness/harness_tasks.py")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)TASK_FAMILIES[^{]*\{(.*?)\n\}`).FindSubmatch(src)
	if block == nil {
		t.Fatal("TASK_FAMILIES not found in harness_tasks.py")
	}
	var harness []string
	for _, m := range regexp.MustCompile(`"([a-z0-9-]+)":`).FindAllSubmatch(block[1], -1) {
		harness = append(harness, string(m[1]))
	}
	slices.Sort(harness)
	if got := SupportedTasks(); !slices.Equal(got, harness) {
		t.Errorf("preflight supports %v\nthe harness supports %v", got, harness)
	}
}
