package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The attack: masks of the read-only trees were computed once, at start;
// a Unix socket a host service created afterwards in one of them was
// reached from inside. The masks now follow the trees: the socket created
// between two commands is hidden from the second.
func TestLateHostSocketsAreMasked(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Chmod(root, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(root), 0o711))
	tools := filepath.Join(root, "toolchain")
	require.NoError(t, os.MkdirAll(filepath.Join(tools, "run"), 0o755))
	dir := workdir(t)
	connect := `perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => shift) or die "refused: $!\n"; print $s "hello\n"; print "connected\n"' `
	readOnly := func(c *Command) { c.ReadOnly = []string{tools} }

	res, out := runIn(t, dir, "ls "+tools+"/run", readOnly) // the tree is seen (and its masks made) before the socket exists
	require.Equal(t, 0, res.ExitCode, out)

	sock := filepath.Join(tools, "run", "late.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, os.Chmod(sock, 0o777))
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 6)
		n, _ := c.Read(b)
		got <- string(b[:n])
	}()

	res, out = runIn(t, dir, connect+sock, readOnly)
	require.NotContains(t, out, "connected", "a socket created after the first command was reached")
	select {
	case msg := <-got:
		t.Fatalf("the host socket received %q from the sandbox", msg)
	default:
	}

	// Control: the same client reaches a socket the command makes itself.
	res, out = runIn(t, dir, `perl -MIO::Socket::UNIX -e '$l = IO::Socket::UNIX->new(Local => "/tmp/own.sock", Listen => 1) or die "$!"; if (fork) { $c = $l->accept; print <$c> } else { sleep 1; $s = IO::Socket::UNIX->new(Peer => "/tmp/own.sock") or die "$!"; print $s "connected\n"; exit }'`)
	require.Equal(t, 0, res.ExitCode, out)
	require.True(t, strings.Contains(out, "connected"), "the client cannot connect at all, so the check above proves nothing: %s", out)
}
