// Package credentials is the client's saved login: the server a person
// logged in to with `paddock login` and the token it gave, in their
// configuration directory, readable by them alone.
package credentials

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// Saved is what `paddock login` keeps in the user's configuration: the
// server logged in to and the token it gave.
type Saved struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
}

// Path is $XDG_CONFIG_HOME/paddock/credentials.yaml (default
// ~/.config/paddock/credentials.yaml).
func Path(getenv func(string) string) (string, error) {
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

// Load reads the saved login (none: the zero Saved).
func Load(getenv func(string) string) (Saved, error) {
	var c Saved
	path, err := Path(getenv)
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

// Save writes c with mode 0600 (its directory 0700), replacing
// the file atomically.
func Save(getenv func(string) string, c Saved) (string, error) {
	path, err := Path(getenv)
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
