package internal_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers of the tree, from the bottom:
//
//   - the foundation (clip, errdefs, identity, session): words every
//     layer shares, importing none of the others;
//   - the store: the system of record, knowing nothing of who calls it;
//   - the core (access, auditlog, engine, health; beneath them the durable
//     session: workflows, durable, copies): the one door, where every use case
//     checks its caller;
//   - the transports (api, web, kube, cli, and terminal, what the CLI
//     shows a person): they decode, call the core and encode, and never
//     touch the store;
//   - the client, which speaks the API's wire types and links nothing of
//     the server;
//   - app, which wires it all, and alone starts the embedded Temporal
//     server.
var (
	foundation = []string{"clip", "errdefs", "identity", "session"}
	transports = []string{"api", "web", "kube", "cli", "terminal", "slackbot"}
	core       = []string{"access", "agency", "auditlog", "chatdesk", "engine", "health", "remote", "workflows", "durable", "copies"}
	upper      = []string{"api", "web", "kube", "cli", "terminal", "slackbot", "client", "app"}
)

// rule is one import rule: the packages who (by their path under
// internal/, a trailing "/..." for a tree) may not import mayNot, or, with
// only, import nothing of internal/ but those.
type rule struct {
	who    []string
	mayNot []string
	only   []string
	why    string
}

var rules = []rule{
	{who: transports, mayNot: []string{"store/..."}, why: "the store belongs to the core: a transport calls the service, which checks its caller"},
	{who: []string{"client"}, only: []string{"clip", "errdefs", "identity", "session", "spec", "audit", "policy", "bound", "forge", "chat", "wire"},
		why: "the client speaks the API's wire types and links nothing of the server (no engine, no Temporal SDK)"},
	{who: []string{"..."}, mayNot: []string{"temporalserver"}, why: "only app starts the embedded Temporal server"},
	{who: foundation, only: foundation, why: "the foundation's words import nothing above them"},
	{who: []string{"store/..."}, mayNot: append(append([]string{}, core...), upper...), why: "the store knows nothing of who calls it"},
	{who: core, mayNot: upper, why: "the core knows nothing of its transports"},
}

// exempt are the packages a rule for "..." leaves alone.
var exempt = map[string][]string{"temporalserver": {"app", "temporalserver"}}

// TestLayers checks every package's imports (not its tests') against
// the rules.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[local(p.ImportPath)] = mapLocal(p.Imports)
	}
	if len(graph["api"]) == 0 || len(graph["engine"]) == 0 {
		t.Fatalf("go list found no internal imports of api or engine: %v", graph)
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestLayersCatchAViolation is the control: a graph breaking each rule
// is refused, with the rule's reason.
func TestLayersCatchAViolation(t *testing.T) {
	bad := map[string][]string{
		"api":     {"store", "engine"},
		"web":     {"store/sqlstore"},
		"client":  {"engine", "session"},
		"cli":     {"temporalserver"},
		"session": {"spec"},
		"store":   {"engine"},
		"engine":  {"api", "store"},
		"app":     {"temporalserver", "store"},
	}
	got := strings.Join(violations(bad), "\n")
	for _, want := range []string{"api imports store", "web imports store/sqlstore", "client imports engine", "cli imports temporalserver",
		"session imports spec", "store imports engine", "engine imports api"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q not reported; got:\n%s", want, got)
		}
	}
	for _, fine := range []string{"app imports", "engine imports store", "client imports session"} {
		if strings.Contains(got, fine) {
			t.Errorf("%q reported, but it is allowed:\n%s", fine, got)
		}
	}
}

func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		for _, r := range rules {
			if !matchesAny(pkg, r.who) {
				continue
			}
			for _, imp := range imports {
				if slices.Contains(exempt[imp], pkg) {
					continue
				}
				if matchesAny(imp, r.mayNot) || (r.only != nil && !matchesAny(imp, r.only) && imp != pkg) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, imp, r.why))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func matchesAny(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if p == "..." || p == pkg {
			return true
		}
		if tree, ok := strings.CutSuffix(p, "/..."); ok && (pkg == tree || strings.HasPrefix(pkg, tree+"/")) {
			return true
		}
	}
	return false
}

const module = "github.com/paddock-dev/paddock/internal/"

// local is an import path under internal/, or "" for any other.
func local(path string) string {
	rest, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	return rest
}

func mapLocal(paths []string) []string {
	var out []string
	for _, p := range paths {
		if l := local(p); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// serverOnly are what the client binary must not link: the embedded
// Temporal server and SDK, the Kubernetes client, the store's drivers,
// the secret detector's rule engine and the server's own packages. Each
// costs start-up time at every client command.
var serverOnly = []string{"go.temporal.io/", "k8s.io/", "sigs.k8s.io/", "modernc.org/sqlite", "github.com/jackc/pgx",
	"github.com/zricethezav/gitleaks", "github.com/aws/", "cloud.google.com/",
	module + "app", module + "engine", module + "durable", module + "workflows", module + "store", module + "secret",
	module + "web", module + "api", module + "temporalserver", module + "kube"}

// linked is what the command at path links, as go list -deps finds it.
func linked(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", path).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", path, err)
	}
	return strings.Fields(string(out))
}

// serverPackages are those of deps serverOnly names (kube/crds, the
// definitions alone, is the client's).
func serverPackages(deps []string) []string {
	var out []string
	for _, d := range deps {
		for _, s := range serverOnly {
			if strings.HasPrefix(d, s) && d != module+"kube/crds" {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// TestClientLinksNoServer: paddock, the client, links nothing of the
// server; paddock-server, the control, links it all.
func TestClientLinksNoServer(t *testing.T) {
	if got := serverPackages(linked(t, "github.com/paddock-dev/paddock/cmd/paddock")); len(got) > 0 {
		t.Errorf("the client links %d server packages, among them %v", len(got), got[:min(len(got), 10)])
	}
	server := serverPackages(linked(t, "github.com/paddock-dev/paddock/cmd/paddock-server"))
	for _, want := range []string{"go.temporal.io/server/temporal", "k8s.io/client-go/rest", module + "engine", "github.com/zricethezav/gitleaks/v8/detect"} {
		if !slices.Contains(server, want) {
			t.Errorf("control: paddock-server does not link %s, so the check would not see it", want)
		}
	}
}
