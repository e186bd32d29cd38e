package sandbox

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMaskRulesNameTheSecrets: the rules a kept tree was walked by
// change with the names it hides, so a tree kept before is walked again.
func TestMaskRulesNameTheSecrets(t *testing.T) {
	for name := range secretNames {
		require.Contains(t, maskRules, name, "change maskRules with the walk's rules")
	}
}

// TestMasksKeptBetweenProcesses: what a walk of a read-only tree found is
// kept in the data directory, and the next process (a new tree) takes it
// instead of walking while no directory of the tree changed; a socket
// created since, a kept file anyone else may write, or one of another
// boot makes it walk again.
func TestMasksKeptBetweenProcesses(t *testing.T) {
	root := filepath.Join(t.TempDir(), "toolchain")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "run"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "signing.key"), []byte("k"), 0o644))
	kept := filepath.Join(t.TempDir(), "sandbox")

	first := &tree{root: root}
	masks := first.current(kept)
	require.Contains(t, masks, "f:"+filepath.Join(root, "signing.key"))
	file := keptPath(kept, root)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The tree's directories were made just now: a walk that recent is
	// done again (their times may not have moved yet). As if it was done
	// well after them:
	var k struct {
		Walked time.Time `json:"walked"`
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &k))
	later := k.Walked.Add(time.Minute)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	// keep writes raw as the kept file, with mode perm.
	keep := func(perm os.FileMode) {
		t.Helper()
		data, err := json.Marshal(raw)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, data, 0o600))
		require.NoError(t, os.Chmod(file, perm))
	}
	// walked is when the tree a new process takes was walked.
	walked := func() time.Time {
		next := &tree{root: root}
		next.current(kept)
		return next.walked
	}
	raw["walked"] = later
	keep(0o600)

	next := &tree{root: root}
	require.Equal(t, masks, next.current(kept))
	require.True(t, next.walked.Equal(later), "the next process took the kept tree without walking")

	// Anyone else may write the file: it is not taken.
	keep(0o622)
	require.False(t, walked().Equal(later), "a kept file others may write was taken")

	// A socket made since: its directory changed, so the next walks.
	keep(0o600)
	ln, err := net.Listen("unix", filepath.Join(root, "run", "late.sock"))
	require.NoError(t, err)
	defer ln.Close()
	after := &tree{root: root}
	require.Contains(t, after.current(kept), "f:"+filepath.Join(root, "run", "late.sock"))

	// One older than keptFor: walked again.
	raw["walked"] = k.Walked.Add(-keptFor - time.Minute)
	keep(0o600)
	require.True(t, walked().After(k.Walked), "a kept tree older than %s was taken", keptFor)

	// One by other rules (another version's walk): walked again.
	raw["walked"], raw["rules"] = later, "another version's"
	keep(0o600)
	require.False(t, walked().Equal(later))
	raw["rules"] = maskRules

	// Another boot's: walked again.
	raw["boot"] = "another-boot"
	keep(0o600)
	require.False(t, walked().Equal(later))
}
