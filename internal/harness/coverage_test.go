package harness

import (
	"strings"
	"testing"

	"github.com/google-pytorch/torchtpu-scanner/internal/testenv"
)

// TestTaskCoverageShares: only transformers-backed models count, covered
// ones by their task (or, untagged, their architecture), and the shares
// are covered over counted, by models and by downloads.
func TestTaskCoverageShares(t *testing.T) {
	var c TaskCoverage
	if c.Share() != nil || c.DownloadShare() != nil {
		t.Fatalf("no models: shares %v, %v, want none", c.Share(), c.DownloadShare())
	}
	c.Add("transformers", true, "text-generation", nil, 3, 600)            // counted, covered
	c.Add("transformers", false, "text-to-image", nil, 1, 200)             // counted, not covered
	c.Add("", true, "", []string{"BertModel"}, 1, 200)                     // counted, covered by its architecture
	c.Add("diffusers", true, "text-to-image", nil, 5, 10_000)              // not transformers: not counted
	c.Add("sentence-transformers", false, "feature-extraction", nil, 7, 7) // no model_type: not counted
	want := TaskCoverage{Models: 5, Covered: 4, Downloads: 1000, CoveredDownloads: 800}
	if c != want {
		t.Fatalf("coverage %+v, want %+v", c, want)
	}
	if s := c.Share(); s == nil || *s != 0.8 {
		t.Errorf("share %v, want 0.8", s)
	}
	if s := c.DownloadShare(); s == nil || *s != 0.8 {
		t.Errorf("download share %v, want 0.8", s)
	}
	// Models without downloads: a model share, but no download share.
	quiet := TaskCoverage{Models: 2, Covered: 1}
	if s := quiet.Share(); s == nil || *s != 0.5 || quiet.DownloadShare() != nil {
		t.Errorf("no downloads: shares %v, %v, want 0.5 and none", s, quiet.DownloadShare())
	}
}

// TestTransformersModel: the library rule answers tasks.json's worked
// examples (which the Python test checks too), and the cases the project
// promises, written out here: a sentence-transformers repository without a
// model_type is not loadable, and neither is diffusers.
func TestTransformersModel(t *testing.T) {
	if len(Tasks.LibraryExamples) < 4 {
		t.Fatalf("only %d library examples", len(Tasks.LibraryExamples))
	}
	for _, ex := range Tasks.LibraryExamples {
		if got := TransformersModel(ex.Library, ex.ModelType); got != ex.Supported {
			t.Errorf("TransformersModel(%q, model_type %v) = %v, tasks.json's example says %v", ex.Library, ex.ModelType, got, ex.Supported)
		}
	}
	for _, tc := range []struct {
		lib       string
		modelType bool
		want      bool
	}{
		{"transformers", false, true}, {"sentence-transformers", true, true}, {"sentence-transformers", false, false},
		{"", true, true}, {"", false, false}, {"diffusers", true, false}, {"Transformers", true, false},
	} {
		if got := TransformersModel(tc.lib, tc.modelType); got != tc.want {
			t.Errorf("TransformersModel(%q, %v) = %v, want %v", tc.lib, tc.modelType, got, tc.want)
		}
	}
	for _, tc := range []struct {
		lib       string
		hasConfig bool
		want      bool
	}{
		{"sentence-transformers", false, false}, {"sentence-transformers", true, true},
		{"diffusers", false, true}, {"transformers", false, true}, {"", false, false},
	} {
		if got := ListingTellsLibrary(tc.lib, tc.hasConfig); got != tc.want {
			t.Errorf("ListingTellsLibrary(%q, %v) = %v, want %v", tc.lib, tc.hasConfig, got, tc.want)
		}
	}
}

// TestLibrariesHaveNoCopies: the library names live in tasks.json; the
// harness's Python reads them there (library_supported) and the Go code
// asks TransformersModel, so no source spells a library as a rule.
func TestLibrariesHaveNoCopies(t *testing.T) {
	src, err := files.ReadFile("harness_tasks.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `TABLE["libraries"]`) {
		t.Error(`harness_tasks.py does not read tasks.json's libraries (TABLE["libraries"])`)
	}
	fakeHub := []string{"internal/hub/hubtest/minilm.go"} // a listing's data, not a rule
	for _, c := range testenv.Copies(t, []string{".go", ".py"}, fakeHub, `"sentence-transformers"`, `'sentence-transformers'`, "SUPPORTED_LIBRARIES") {
		t.Errorf("%s: a copy of tasks.json's libraries", c)
	}
}
