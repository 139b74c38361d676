package probestep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google-pytorch/torchtpu-scanner/internal/compat"
	"github.com/google-pytorch/torchtpu-scanner/internal/hub"
)

// Downloader fetches files of a repository at a revision into the Hub
// cache; *hub.Client is the real one.
type Downloader interface {
	Download(ctx context.Context, id, sha string, files []string) (string, error)
}

// FetchFailed is the result of a model whose files could not be fetched
// or read: a repo file (not weights) over the cap of its kind is an error
// of class config_error that names it (the scanner refused to store or
// read it: no verdict on the model); the Hub's own answers (gated, not
// found, disabled) are skips; anything else is the scanner's environment
// failing, never held against the model. Request.Fill completes it.
func FetchFailed(err error) compat.Result {
	if ce, ok := hub.IsCapError(err); ok && !hub.IsWeightFile(ce.File) {
		return compat.Result{
			Status:       compat.StatusError,
			Stage:        compat.Ptr(compat.StageConfig),
			FailureClass: compat.Ptr(compat.ClassConfigError),
			Message:      compat.Ptr("refused: " + ce.Error()),
		}
	}
	if he, ok := errors.AsType[*hub.Error](err); ok && he.Reason() != "" {
		return compat.Result{
			Status:  compat.StatusSkipped,
			Reason:  compat.Ptr(he.Reason()),
			Message: compat.Ptr("hub: " + he.Error()),
		}
	}
	return ScannerError(compat.StageConfig, fmt.Errorf("fetch files: %w", err))
}

// ScannerError is a result of status error: the scanner's problem at
// stage, never the model's.
func ScannerError(stage compat.Stage, err error) compat.Result {
	return compat.Result{
		Status:       compat.StatusError,
		Stage:        compat.Ptr(stage),
		FailureClass: compat.Ptr(compat.ClassOther),
		Message:      compat.Ptr(err.Error()),
	}
}

// FetchInputs downloads a model's tokenizer and processor files
// (hub.InputFiles), each on its own: none is needed (the probe builds
// synthetic inputs without them), so a file that is missing, refused or
// over its cap (hub.FileCap) is logged and named in the returned note, for
// the probe's plan note, and never fails the model. The note is "" when
// every file came (or ctx ended).
func FetchInputs(ctx context.Context, dl Downloader, log *slog.Logger, id, sha string, files []string) string {
	var missed []string
	for _, f := range files {
		if _, err := dl.Download(ctx, id, sha, []string{f}); err != nil {
			if ctx.Err() != nil {
				return ""
			}
			log.Warn("input file not fetched; the probe falls back to synthetic inputs if it needs it",
				"model", id, "file", f, "err", err)
			missed = append(missed, f+" ("+inputFileProblem(err)+")")
		}
	}
	if len(missed) == 0 {
		return ""
	}
	return "input files not fetched: " + strings.Join(missed, ", ")
}

// inputFileProblem is the short reason an input file was not fetched.
func inputFileProblem(err error) string {
	var he *hub.Error
	switch {
	case errors.Is(err, hub.ErrTooLarge):
		return "over its size cap"
	case errors.Is(err, hub.ErrNotAllowed):
		return "not an allowed file type"
	case errors.Is(err, hub.ErrIntegrity):
		return "failed its integrity check"
	case errors.As(err, &he):
		return fmt.Sprintf("the Hub answered %d", he.Status)
	}
	return "download failed"
}
