package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddock-dev/paddock/internal/datadir"
	"go.yaml.in/yaml/v3"
	"golang.org/x/term"
)

// credentials is what `paddock login` keeps in the user's configuration:
// the server logged in to and the token it gave.
type credentials struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
}

// credentialsPath is $XDG_CONFIG_HOME/paddock/credentials.yaml (default
// ~/.config/paddock/credentials.yaml).
func credentialsPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no home directory for the credentials file: set XDG_CONFIG_HOME or HOME")
			}
			home = h
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "paddock", "credentials.yaml"), nil
}

func loadCredentials(getenv func(string) string) (credentials, error) {
	var c credentials
	path, err := credentialsPath(getenv)
	if err != nil {
		return c, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// saveCredentials writes c with mode 0600 (its directory 0700), replacing
// the file atomically.
func saveCredentials(getenv func(string) string, c credentials) (string, error) {
	path, err := credentialsPath(getenv)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	data, _ := yaml.Marshal(c)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// token is the credential client commands send to server: PADDOCK_TOKEN,
// else the one `paddock login` saved for that server, else the first
// administrator's token in the data directory (the same machine).
func (g *globals) token(server string) string {
	if g.cfg.Token != "" {
		return g.cfg.Token
	}
	if c, err := loadCredentials(g.io.Getenv); err == nil && c.Token != "" && strings.TrimRight(c.Server, "/") == strings.TrimRight(server, "/") {
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
