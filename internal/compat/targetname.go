package compat

// targetNames is the one table of what a target is called to people: on
// the pages (Name: headings, chart titles, "on …") and as a badge's
// default label (Badge, the library a user's README advertises). Nothing
// else spells these words (TestTargetNamesHaveNoCopies).
var targetNames = map[Target]struct{ Name, Badge string }{
	TargetTPU:  {Name: "TPU (TorchTPU)", Badge: "TorchTPU"},
	TargetCPU:  {Name: "CPU", Badge: "PyTorch CPU"},
	TargetCUDA: {Name: "CUDA", Badge: "PyTorch CUDA"},
}

// Name is how a target is called on pages: "TPU (TorchTPU)", "CPU",
// "CUDA"; "any target" for none (a filter that selects every target);
// anything else as it is spelled.
func (t Target) Name() string {
	if n, ok := targetNames[t]; ok {
		return n.Name
	}
	if t == "" {
		return "any target"
	}
	return string(t)
}

// BadgeLabel is a badge's label for the target when the user names none:
// "TorchTPU" on tpu (and for a target that is not a result's, auto),
// "PyTorch CPU", "PyTorch CUDA".
func (t Target) BadgeLabel() string {
	if n, ok := targetNames[t]; ok {
		return n.Badge
	}
	return targetNames[TargetTPU].Badge
}
