package compat

import (
	"errors"
	"fmt"
	"slices"
)

// Validate is the one check of a result that may be recorded: a result
// status, a concrete target, a tested_at, and the contract's words for its
// stage, failure class, reason, mode (full or arch) and stages; a skip
// names its reason. The runner checks what the harness wrote by it (once it
// filled in its part), the fleet a result a worker posts, the store a
// result it records; each adds only what it alone knows (the request, the
// job, the model).
func (r Result) Validate() error {
	switch {
	case !r.Status.Valid() || r.Status == StatusUntested:
		return fmt.Errorf("status %q is not a result status", r.Status)
	case !slices.Contains(Targets, r.Target):
		return fmt.Errorf("target %q (want tpu, cpu or cuda)", r.Target)
	case r.TestedAt.IsZero():
		return errors.New("no tested_at")
	case r.Stage != nil && !r.Stage.Valid():
		return fmt.Errorf("stage %q is not a contract stage", *r.Stage)
	case r.FailureClass != nil && !r.FailureClass.Valid():
		return fmt.Errorf("failure_class %q is not a contract failure class", *r.FailureClass)
	case r.Reason != nil && !r.Reason.Valid():
		return fmt.Errorf("reason %q is not a contract reason", *r.Reason)
	case r.Status == StatusSkipped && r.Reason == nil:
		return errors.New("status skipped without a reason")
	case r.Mode != nil && *r.Mode != ModeFull && *r.Mode != ModeArch:
		return fmt.Errorf("mode %q is not full or arch", *r.Mode)
	case r.DevicesUsed < 0 || r.DevicesUsed > 1024:
		return fmt.Errorf("devices_used %d", r.DevicesUsed)
	case r.Sharding != nil && !r.Sharding.Valid():
		return fmt.Errorf("sharding %q is not tp or fsdp", *r.Sharding)
	case r.Sharding != nil && r.DevicesUsed < 2:
		return fmt.Errorf("sharding %q on %d devices", *r.Sharding, r.DevicesUsed)
	}
	for _, s := range r.Stages {
		if !s.Stage.Valid() {
			return fmt.Errorf("stages: %q is not a contract stage", s.Stage)
		}
	}
	return nil
}
