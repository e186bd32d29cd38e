package session_test

import (
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/stretchr/testify/require"
)

func TestStepDiff(t *testing.T) {
	f := func(path, mode, blob string) session.StepFile {
		return session.StepFile{Path: path, Mode: mode, Blob: blob}
	}
	step := func(files ...session.StepFile) session.Step { return session.Step{Files: files} }
	for name, c := range map[string]struct {
		a, b session.Step
		want []session.StepChange
	}{
		"base to first":            {step(), step(f("a", "100644", "1"), f("gone", "", "")), []session.StepChange{{"a", "changed"}, {"gone", "deleted"}}},
		"same":                     {step(f("a", "100644", "1")), step(f("a", "100644", "1")), nil},
		"edited again":             {step(f("a", "100644", "1")), step(f("a", "100644", "2")), []session.StepChange{{"a", "changed"}}},
		"made executable":          {step(f("a", "100644", "1")), step(f("a", "100755", "1")), []session.StepChange{{"a", "changed"}}},
		"back to base":             {step(f("a", "100644", "1")), step(), []session.StepChange{{"a", "reverted"}}},
		"deleted, then made again": {step(f("a", "", "")), step(f("a", "100644", "3")), []session.StepChange{{"a", "created"}}},
		"later to earlier":         {step(f("a", "100644", "2"), f("b", "100644", "1")), step(f("a", "100644", "1")), []session.StepChange{{"a", "changed"}, {"b", "reverted"}}},
	} {
		require.Equal(t, c.want, session.StepDiff(c.a, c.b), name)
	}
}
