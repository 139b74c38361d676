package harness

// TransformersModel reports whether a model with this Hub library_name
// loads with transformers' Auto classes, which is all the harness loads:
// library transformers; or sentence-transformers, whose repositories carry
// a plain transformers backbone, or no library name, when its config.json
// has a model_type.
func TransformersModel(library string, hasModelType bool) bool {
	switch library {
	case "transformers":
		return true
	case "sentence-transformers", "":
		return hasModelType
	}
	return false
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
