package compat

import (
	"errors"
	"fmt"
	"strings"
)

// maxModelIDPart is the longest a Hub id's namespace or name may be.
const maxModelIDPart = 96

// ValidateModelID is the one rule for what a Hugging Face model id is,
// used wherever an id comes in (--model, the Hub client and its cache, the
// web routes); ValidateModelNamespace applies it to a namespace alone.
// It is huggingface_hub's validate_repo_id, which mirrors the Hub's own
// rule:
//
//   - "name" (a legacy one-part id such as "gpt2") or "namespace/name";
//   - each part 1 to 96 characters of ASCII letters, digits, '-', '_' and
//     '.', starting and ending with a letter, digit or '_';
//   - no "--" or ".." anywhere, and no ".git" at the end.
//
// Letter case is kept and not judged (the Hub redirects other cases of an
// id to its own). A valid id is safe as a path: it has no "." or ".."
// segment, no separator but the one '/', and maps one-to-one onto
// huggingface_hub's cache folder name (models--namespace--name).
func ValidateModelID(id string) error {
	if id == "" {
		return errors.New("empty model id")
	}
	parts := strings.Split(id, "/")
	if len(parts) > 2 {
		return fmt.Errorf("model id %q: want \"name\" or \"namespace/name\"", id)
	}
	for _, p := range parts {
		if err := validatePart(p); err != nil {
			return fmt.Errorf("model id %q: %w", id, err)
		}
	}
	if strings.Contains(id, "--") || strings.Contains(id, "..") {
		return fmt.Errorf("model id %q: cannot contain \"--\" or \"..\"", id)
	}
	if strings.HasSuffix(id, ".git") {
		return fmt.Errorf("model id %q: cannot end with \".git\"", id)
	}
	return nil
}

// ValidateModelNamespace is ValidateModelID's rule for a namespace alone
// (the organisation or user of "namespace/name", as in ?org=): ns is valid
// exactly when ns + "/" + some valid name is a valid id.
func ValidateModelNamespace(ns string) error {
	if err := validatePart(ns); err != nil {
		return fmt.Errorf("model namespace %q: %w", ns, err)
	}
	if strings.Contains(ns, "--") || strings.Contains(ns, "..") {
		return fmt.Errorf("model namespace %q: cannot contain \"--\" or \"..\"", ns)
	}
	return nil
}

// validatePart checks one part of an id (its namespace or its name).
func validatePart(p string) error {
	if len(p) == 0 || len(p) > maxModelIDPart {
		return fmt.Errorf("each part must be 1 to %d characters", maxModelIDPart)
	}
	for i := 0; i < len(p); i++ {
		if !idChar(p[i]) {
			return errors.New("only letters, digits, '-', '_' and '.' are allowed")
		}
	}
	if first, last := p[0], p[len(p)-1]; first == '-' || first == '.' || last == '-' || last == '.' {
		return errors.New("a part cannot start or end with '-' or '.'")
	}
	return nil
}

func idChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}
