package egress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

// ForwarderName is the name the paddock binary runs under, inside a
// sandbox, as the forwarder: a process started as ForwarderName (argv[0]'s
// base) runs ForwarderMain instead of the program. Any binary that calls
// Reexec first (paddock's main, and the tests that run sandboxes with
// egress) can serve.
const ForwarderName = "paddock-egress-forward"

// Reexec runs the forwarder and exits when this process was started as
// ForwarderName; otherwise it returns at once.
func Reexec() {
	if filepath.Base(os.Args[0]) == ForwarderName {
		os.Exit(ForwarderMain(os.Args[1:]))
	}
}

// ForwarderMain is the forwarder: `-listen ADDR -socket PATH -- ARGV...`
// listens on ADDR (the sandbox's loopback), then runs ARGV with the same
// standard streams and environment, relaying every connection made to ADDR
// to the proxy's socket at PATH until ARGV ends. It exits with ARGV's
// status (128+N when a signal N ended it, as a shell reports it), and
// passes on SIGTERM, SIGINT and SIGHUP.
func ForwarderMain(args []string) int {
	fs := flag.NewFlagSet(ForwarderName, flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on")
	socket := fs.String("socket", "", "the proxy's Unix socket")
	if err := fs.Parse(args); err != nil || *listen == "" || *socket == "" || fs.NArg() == 0 {
		fmt.Fprintf(os.Stderr, "%s: usage: -listen ADDR -socket PATH -- COMMAND...\n", ForwarderName)
		return 125
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", ForwarderName, err)
		return 125
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Forward(ctx, ln, UnixDialer(*socket))
	}()
	argv := fs.Args()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", ForwarderName, err)
		cancel()
		<-done
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	cancel()
	<-done
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 125
}
