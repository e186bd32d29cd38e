package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddock-dev/paddock/internal/credentials"
	"github.com/paddock-dev/paddock/internal/datadir"
	"golang.org/x/term"
)

// token is the credential client commands send to server: PADDOCK_TOKEN,
// else the one `paddock login` saved for that server, else the first
// administrator's token in the data directory (the same machine).
func (g *globals) token(server string) string {
	if g.cfg.Token != "" {
		return g.cfg.Token
	}
	if c, err := credentials.Load(g.io.Getenv); err == nil && c.Token != "" && strings.TrimRight(c.Server, "/") == strings.TrimRight(server, "/") {
		return c.Token
	}
	if data, err := os.ReadFile(filepath.Join(g.cfg.DataDir, datadir.AdminToken)); err == nil {
		return strings.TrimSpace(string(data))
	}
	return ""
}

// readSecrets reads one line per name from standard input, prompting on
// standard error; on a terminal the input is not echoed.
func readSecrets(g *globals, names []string) (map[string]string, error) {
	out := map[string]string{}
	f, isFile := g.io.In.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	r := bufio.NewReader(g.io.In)
	for _, name := range names {
		fmt.Fprintf(g.io.Err, "%s: ", name)
		var line string
		if tty {
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(g.io.Err)
			if err != nil {
				return nil, err
			}
			line = string(b)
		} else {
			l, err := r.ReadString('\n')
			if err != nil && l == "" {
				return nil, fmt.Errorf("no value for %s on standard input (one line per credential: %s)", name, strings.Join(names, ", "))
			}
			line = strings.TrimRight(l, "\r\n")
		}
		out[name] = line
	}
	return out, nil
}
