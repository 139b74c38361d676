package harness

// TransformersModel reports whether a model with this Hub library_name
// loads with transformers' Auto classes, which is all the harness loads:
// the libraries of tasks.json, where a sentence-transformers repository
// (a plain transformers backbone) or one without a library name counts
// only when its config.json has a model_type. The harness applies the same
// table (harness_tasks.py, library_supported).
func TransformersModel(library string, hasModelType bool) bool {
	spec, ok := Tasks.Libraries[library]
	return ok && (hasModelType || !spec.NeedsModelType)
}

// ListingTellsLibrary reports whether a model's library alone, from its
// Hub listing, settles TransformersModel's answer, when the listing did
// not carry config.json (hasConfig false): a library the table needs a
// model_type for waits for config.json, any other library settles it.
func ListingTellsLibrary(library string, hasConfig bool) bool {
	spec, ok := Tasks.Libraries[library]
	return hasConfig || !ok || !spec.NeedsModelType
}

// TaskCoverage is which share of a set of transformers-backed models (and
// of their downloads) falls in a task the harness exercises.
type TaskCoverage struct {
	Models           int   // transformers-backed models
	Covered          int   // of them, those whose task the harness exercises
	Downloads        int64 // the Models' downloads
	CoveredDownloads int64 // the Covered ones' downloads
}

// Add counts n models with downloads in all: those of a transformers
// library (TransformersModel) are counted, and covered when the harness
// supports their pipeline tag (or, without one, their architectures).
func (c *TaskCoverage) Add(library string, hasModelType bool, task string, architectures []string, n int, downloads int64) {
	if !TransformersModel(library, hasModelType) {
		return
	}
	c.Models += n
	c.Downloads += downloads
	if SupportedTask(task, architectures) {
		c.Covered += n
		c.CoveredDownloads += downloads
	}
}

// Share is Covered ÷ Models, nil when there are none.
func (c TaskCoverage) Share() *float64 {
	if c.Models == 0 {
		return nil
	}
	r := float64(c.Covered) / float64(c.Models)
	return &r
}

// DownloadShare is CoveredDownloads ÷ Downloads, nil when there are none.
func (c TaskCoverage) DownloadShare() *float64 {
	if c.Downloads == 0 {
		return nil
	}
	r := float64(c.CoveredDownloads) / float64(c.Downloads)
	return &r
}
