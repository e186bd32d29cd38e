package workspace

import (
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
)

func TestDiffRedacted(t *testing.T) {
	token := "ghp_" + "R5tP9zKq2LmX8vN3bW7cY1dF6gH4jS0aQeUi"
	d := session.Diff{
		Files: []session.ChangedFile{{Path: "README.md", Status: "modified"}, {Path: "deploy/config.env", Status: "added"}, {Path: "go.mod", Status: "modified", Flagged: true, Reason: "dependency manifest"}},
		Patch: "diff --git a/README.md b/README.md\n+hello\n" +
			"diff --git a/deploy/config.env b/deploy/config.env\nnew file mode 100644\n+GITHUB_TOKEN=" + token + "\n" +
			"diff --git a/go.mod b/go.mod\n+require x v1\n",
	}
	r := Redacted(d)
	if strings.Contains(r.Patch, token) || !strings.Contains(r.Patch, "+GITHUB_TOKEN=[REDACTED:github-pat]") {
		t.Fatalf("patch not redacted:\n%s", r.Patch)
	}
	if !strings.Contains(r.Patch, "+hello") || !strings.Contains(r.Patch, "+require x v1") || strings.Count(r.Patch, "diff --git ") != 3 {
		t.Fatalf("other files changed:\n%s", r.Patch)
	}
	if f := r.Files[1]; !f.Flagged || !strings.Contains(f.Reason, "github-pat") {
		t.Errorf("file with the secret not flagged: %+v", f)
	}
	if r.Files[0].Flagged || r.Files[2].Reason != "dependency manifest" {
		t.Errorf("other files' flags changed: %+v", r.Files)
	}
	if d.Files[1].Flagged {
		t.Error("Redacted modified the original diff")
	}
	clean := session.Diff{Files: d.Files[:1], Patch: "diff --git a/README.md b/README.md\n+hello\n"}
	if got := Redacted(clean); got.Patch != clean.Patch || got.Files[0].Flagged {
		t.Errorf("clean diff changed: %+v", got)
	}
}
