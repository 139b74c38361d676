package hub

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// IsWeightFile reports whether the repo file name holds weights
// (*.safetensors), which are capped by size per file and model, not by kind.
func IsWeightFile(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".safetensors")
}

// CapError is a file over the cap of its kind (FileCap, within the
// client's MaxFileBytes); it matches
// ErrTooLarge. Size is what the Hub announced or what was seen, -1 when
// the file was cut off at the cap without a size.
type CapError struct {
	File string // repo path, e.g. config.json
	Size int64
	Cap  int64
}

func (e *CapError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s is over the %s cap for a file of its kind", e.File, sizeText(e.Cap))
	}
	return fmt.Sprintf("%s is %s, over the %s cap for a file of its kind", e.File, sizeText(e.Size), sizeText(e.Cap))
}

func (e *CapError) Unwrap() error { return ErrTooLarge }

// sizeText renders n bytes for a person: 8 MiB, 2.0 GiB, 19.6 KiB, 512 bytes.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadCapped reads the snapshot file at p, the repo file name, whole, if
// it is within FileCap for its kind. Weights and files the scanner does
// not download have no such cap and are never read whole (a *CapError). A
// larger file is a *CapError, found without reading it.
func ReadCapped(p, name string) ([]byte, error) {
	if !AllowedFile(name) || IsWeightFile(name) {
		return nil, &CapError{File: name, Size: -1, Cap: 0}
	}
	limit := FileCap(name)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		return nil, &CapError{File: name, Size: fi.Size(), Cap: limit}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &CapError{File: name, Size: -1, Cap: limit}
	}
	return b, nil
}

// IsCapError reports whether err is a file over the cap of its kind, and
// which.
func IsCapError(err error) (*CapError, bool) {
	var ce *CapError
	ok := errors.As(err, &ce)
	return ce, ok
}
