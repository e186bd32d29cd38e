package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// starters are the only packages that start programs on the host: the
// sandbox (bwrap), the workspace (hardened git, the only git on a working
// copy), the volume (mkfs, mount; without root fuse2fs, and fuse-overlayfs
// serving the copies of package overlay) and the command analysis (a restricted
// bash that prints its reading of a command with every command skipped,
// may open no file and runs as nobody when Paddock is root; see
// shellcheck.BashParser), and the local server (the paddock binary
// itself, started as a person's background server by their own command,
// never on a working copy). The volume's build cache (cachefs) mounts
// through go-fuse, which starts the setuid fusermount3 on a mount point of
// Paddock's, never on a working copy. A working copy is hostile input, so any other
// package that starts a program is a path from it to the host.
var starters = map[string]bool{"sandbox": true, "workspace": true, "volume": true, "shellcheck": true, "local": true}

// inSandbox are files whose code runs only inside a sandbox: the egress
// forwarder starts the sandboxed command as its child (the paddock binary
// started as paddock-egress-forward by bwrap, see egress.Reexec).
// So is the executor's server, which runs in a sandbox pod (paddock kube
// executor) and starts the session's commands and long-lived processes
// (stdio MCP servers) there.
var inSandbox = map[string]bool{"egress/forwarder.go": true, "executor/server.go": true, "executor/process.go": true}

// testOnly are packages only tests import (the PostgreSQL test cluster
// starts initdb and pg_ctl; podtest runs the simulated pods' executors;
// durabletest makes a git repository for the durable session's tests;
// forgetest serves git over HTTP and runs a Gitea for the forge tests);
// TestOnlyStartersStartPrograms checks that no production file imports
// them.
var testOnly = map[string]bool{"pgtest": true, "podtest": true, "durabletest": true, "forgetest": true, "jaegertest": true}

// TestOnlyStartersStartPrograms fails when production code outside those
// packages calls os/exec (or os.StartProcess, syscall.Exec).
func TestOnlyStartersStartPrograms(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{".", "../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			pkg := filepath.Base(filepath.Dir(path))
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if testOnly[filepath.Base(strings.Trim(imp.Path.Value, `"`))] {
					t.Errorf("%s imports %s, a package for tests only", path, imp.Path.Value)
				}
			}
			if testOnly[pkg] {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				call := x.Name + "." + sel.Sel.Name
				switch call {
				case "exec.Command", "exec.CommandContext", "os.StartProcess", "syscall.Exec", "syscall.ForkExec", "exec.LookPath":
					if !starters[pkg] && !inSandbox[filepath.ToSlash(path)] {
						t.Errorf("%s: %s outside the packages that may start programs (%v)", fset.Position(sel.Pos()), call, starters)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
