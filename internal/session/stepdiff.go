package session

import "sort"

// StepChange is a file whose state differs between two steps.
type StepChange struct {
	Path   string
	Status string // changed, deleted, created (again, after a deletion), reverted (to the base)
}

// StepDiff lists the files whose state differs between checkpoints a and
// b. A checkpoint names every file that differs from the base; one it does
// not name is as in the base.
func StepDiff(a, b Step) []StepChange {
	state := func(c Step) map[string]StepFile {
		m := map[string]StepFile{}
		for _, f := range c.Files {
			m[f.Path] = f
		}
		return m
	}
	sa, sb := state(a), state(b)
	var out []StepChange
	for p, fb := range sb {
		fa, ina := sa[p]
		switch {
		case ina && fa == fb:
		case fb.Mode == "":
			out = append(out, StepChange{p, "deleted"})
		case ina && fa.Mode == "":
			out = append(out, StepChange{p, "created"})
		default:
			out = append(out, StepChange{p, "changed"})
		}
	}
	for p := range sa {
		if _, inb := sb[p]; !inb {
			out = append(out, StepChange{p, "reverted"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
