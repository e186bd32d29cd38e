// Package executor runs a session's commands inside its pod, for the
// worker that holds the session's working copy: `paddock executor` serves
// the worker over mutual TLS, keeps its own copy of the working copy on
// the pod's volume, and runs each command (by ID, once at most) with the
// same time and output limits as bubblewrap. The pod is the sandbox; the
// executor isolates nothing itself.
//
// The worker is the client: before a command it pushes what changed in
// its copy, after it pulls back what the command changed, as hostile
// input (see Returnable and Unpack). The session's dependency caches are
// a second tree, taken back only after an environment's setup. A command
// allowed the network reaches its run's egress proxy through a forwarder
// the executor serves on the pod's loopback for the command's time.
package executor

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/egress"
	"github.com/paddock-dev/paddock/internal/sandbox"
)

// Port is where the executor listens in its pod.
const Port = 7443

// maxRequest bounds a JSON request body.
const maxRequest = 32 << 20

// RunRequest asks for one command.
type RunRequest struct {
	ID        string            `json:"id"`
	Script    string            `json:"script"`
	Env       map[string]string `json:"env,omitempty"`
	TimeoutMS int64             `json:"timeoutMs"`
	MaxOutput int64             `json:"maxOutput"`
	// Deps says the command uses the dependency caches (the Deps tree):
	// the package managers' variables point there.
	Deps bool `json:"deps,omitempty"`
	// Egress, when set, is the run's way to its egress proxy: the
	// executor serves a forwarder to it on the pod's loopback, where the
	// command's proxy variables point. Without it the command has no
	// network (the pod's network policy allows only the gateway, and
	// only a run's token opens that).
	Egress *egress.Route `json:"egress,omitempty"`
}

// Frame is one line of a command's answer: output, or at the end its
// result.
type Frame struct {
	Out    []byte     `json:"o,omitempty"`
	Err    bool       `json:"e,omitempty"`
	Result *RunResult `json:"r,omitempty"`
	Fail   string     `json:"f,omitempty"`
}

// RunResult is how a command ended.
type RunResult struct {
	ExitCode   int   `json:"exit"`
	Discarded  int64 `json:"discarded"`
	TimedOut   bool  `json:"timedOut"`
	DurationMS int64 `json:"durationMs"`
}

// Server is the executor of one pod.
type Server struct {
	// Workdir is the executor's copy of the working copy (the Work
	// tree), Deps its copy of the session's dependency caches (the Deps
	// tree); State holds its key and the journal of runs started. All
	// live on the pod's volume.
	Workdir, Deps, State string
	// Clients are the authorities whose certificates the worker presents.
	Clients *x509.CertPool
	// Alone says the executor is the first process (PID 1) of the pod's
	// own PID namespace: after each command it kills every other process
	// there at once, so nothing a command started (in a session of its
	// own, or forking as fast as it can) outlives it. Serve refuses to
	// start as anything but PID 1 when it is set.
	Alone bool
	// Scratch are the pod's directories a bubblewrap sandbox has fresh
	// for each command (/tmp, the home directory): the executor empties
	// them before each command, but for Cache, the session's build cache,
	// which outlives commands as under bubblewrap and is emptied only for
	// a command asking for a fresh sandbox (an environment's setup).
	Scratch []string
	Cache   string
	Logger  *slog.Logger

	mu    sync.Mutex // one transfer or command at a time
	trees map[Tree]*Scanner
}

// shrugged are the signals that would end or stop the executor, which a
// command may send it: the executor, alone in its pod, drops them.
var shrugged = []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGABRT, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE,
	unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGSTKFLT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGPIPE, unix.SIGALRM, unix.SIGXCPU, unix.SIGXFSZ}

// Tree names one of the trees the executor keeps.
type Tree string

// The trees: the working copy, and the dependency caches that an
// environment's setup fills (sent before each command of a session that
// has them, taken back only after setup).
const (
	Work Tree = "work"
	Deps Tree = "deps"
)

// Serve answers the worker on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.Clients == nil {
		return errors.New("the executor needs the authority of the workers' certificates (PADDOCK_EXECUTOR_CA)")
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Deps == "" {
		return errors.New("the executor needs a directory for the dependency caches")
	}
	if s.Alone && os.Getpid() != 1 {
		return fmt.Errorf("the executor is process %d, not the first process of its pod: it kills what a command leaves by signalling every process of its PID namespace, so it must be PID 1 of a pod of its own (Paddock's SandboxTemplate; shareProcessNamespace off, no init process in front of it)", os.Getpid())
	}
	for _, d := range s.Scratch {
		if rel, err := filepath.Rel(d, s.Cache); s.Cache != "" && err == nil && rel != "." && !strings.HasPrefix(rel, "..") && strings.Contains(rel, "/") {
			return fmt.Errorf("the build cache %s must be in scratch directory %s itself, not deeper", s.Cache, d)
		}
	}
	for _, d := range []string{s.Workdir, s.Deps, filepath.Join(s.State, "ran")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if s.Alone {
		// Commands share the executor's user, so they may signal it: none
		// of theirs ends it (kill(-1) spares it too). SIGKILL, the
		// kubelet's after the pod's grace period, still does.
		sigs := make(chan os.Signal, 16)
		signal.Notify(sigs, shrugged...)
		defer signal.Stop(sigs)
		go func() {
			for range sigs {
			}
		}()
	}
	s.trees = map[Tree]*Scanner{Work: {}, Deps: {}}
	cert, err := Key(s.State)
	if err != nil {
		return err
	}
	// Commands run as this user: they may not attach to the executor
	// or read its memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the executor undumpable: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/manifest", s.manifest)
	mux.HandleFunc("POST /v1/put", s.put)
	mux.HandleFunc("POST /v1/get", s.get)
	mux.HandleFunc("POST /v1/run", s.run)
	mux.HandleFunc("POST /v1/start", s.start)
	mux.HandleFunc("POST /v1/fresh", s.renew)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: s.Clients, MinVersion: tls.VersionTLS13}}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	s.Logger.Info("executor serving", "addr", ln.Addr().String(), "key", Fingerprint(cert.Leaf))
	err = srv.ServeTLS(ln, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func fail(w http.ResponseWriter, code int, err error) {
	http.Error(w, err.Error(), code)
}

// withRoot serves one request holding the executor (one transfer or
// command at a time) with the tree it names open (?tree=, the working
// copy by default).
func (s *Server) withRoot(w http.ResponseWriter, r *http.Request, serve func(root *os.Root, tree Tree)) {
	tree := Tree(cmp.Or(r.URL.Query().Get("tree"), string(Work)))
	dir := map[Tree]string{Work: s.Workdir, Deps: s.Deps}[tree]
	if dir == "" {
		fail(w, http.StatusBadRequest, fmt.Errorf("no tree %q: want %s or %s", tree, Work, Deps))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := os.OpenRoot(dir)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	defer root.Close()
	serve(root, tree)
}

func (s *Server) manifest(w http.ResponseWriter, r *http.Request) {
	s.withRoot(w, r, func(root *os.Root, tree Tree) {
		m, err := s.trees[tree].Scan(root)
		if err != nil {
			fail(w, http.StatusInternalServerError, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	})
}

func (s *Server) put(w http.ResponseWriter, r *http.Request) {
	s.withRoot(w, r, func(root *os.Root, tree Tree) {
		t, err := Unpack(r.Body, Into{Root: root, UID: -1})
		if err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		s.Logger.Info("copy received", "tree", tree, "written", t.Written, "removed", t.Removed, "bytes", t.Bytes)
		_ = json.NewEncoder(w).Encode(t)
	})
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	var paths []string
	if err := json.NewDecoder(io.LimitReader(r.Body, maxManifest)).Decode(&paths); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("the paths to send: %w", err))
		return
	}
	for _, p := range paths {
		if _, err := Clean(p); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	s.withRoot(w, r, func(root *os.Root, _ Tree) {
		w.Header().Set("Content-Type", "application/x-tar")
		if err := Pack(w, root, Changes{Copy: paths}); err != nil {
			s.Logger.Warn("sending files", "err", err)
		}
	})
}

// run starts the command of an ID never started before (a second request
// for it is refused: its first may have run) and streams its output.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var req RunRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequest)).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("the command: %w", err))
		return
	}
	if req.ID == "" || req.Script == "" {
		fail(w, http.StatusBadRequest, errors.New("the command needs an id and a script"))
		return
	}
	sum := sha256.Sum256([]byte(req.ID))
	mark, err := os.OpenFile(filepath.Join(s.State, "ran", hex.EncodeToString(sum[:])), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		fail(w, http.StatusConflict, fmt.Errorf("run %q was started before: it is not started again", req.ID))
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	_ = mark.Close()
	if err := s.fresh(false); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush() // the answer starts now, whenever output comes
	}
	var wmu sync.Mutex
	enc := json.NewEncoder(w)
	send := func(f Frame) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(f)
		if fl != nil {
			fl.Flush()
		}
	}
	env := []string{}
	vars := sandbox.Environment(req.Env)
	if req.Deps {
		maps.Copy(vars, sandbox.DepsEnv(s.Deps))
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	if req.Egress != nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			send(Frame{Fail: fmt.Sprintf("the command's egress forwarder: %v", err)})
			return
		}
		fctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = egress.Forward(fctx, ln, egress.Dialer(*req.Egress, s.Clients)) }()
		defer func() { stop(); <-done }()
		env = append(env, egress.Env(ln.Addr().String())...)
	}
	cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", req.Script)
	cmd.Dir, cmd.Env = s.Workdir, env
	res, err := sandbox.Supervise(r.Context(), sandbox.Command{Timeout: time.Duration(req.TimeoutMS) * time.Millisecond, MaxOutput: req.MaxOutput,
		Stdout: frameWriter{send, false}, Stderr: frameWriter{send, true}}, cmd)
	if s.Alone {
		s.sweep()
	}
	if err != nil {
		send(Frame{Fail: err.Error()})
		return
	}
	s.Logger.Info("command ran", "id", req.ID, "exit", res.ExitCode, "timedOut", res.TimedOut)
	send(Frame{Result: &RunResult{ExitCode: res.ExitCode, Discarded: res.Discarded, TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds()}})
}

// renew empties the scratch directories and the build cache, as a new
// sandbox has them: the worker asks before an environment's setup, whose
// layer may serve other sessions, and before it pushes its trees, which
// the push then puts back whatever the cache was made to hold.
func (s *Server) renew(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(true); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// fresh empties the scratch directories, and the build cache when cache
// is set, as a new bubblewrap sandbox would have them. Nothing of the
// last command runs any more (sweep), so nothing races it.
func (s *Server) fresh(cache bool) error {
	for _, d := range s.Scratch {
		if err := empty(d, s.Cache); err != nil {
			return fmt.Errorf("empty %s before the command: %w", d, err)
		}
	}
	if cache && s.Cache != "" {
		if err := empty(s.Cache, ""); err != nil {
			return fmt.Errorf("empty the build cache %s before the command: %w", s.Cache, err)
		}
	}
	return nil
}

// empty removes everything in dir but its entry keep (a path), as the
// owner of what is there: directories a command made unreadable are
// opened again first. A missing dir is empty.
func empty(dir, keep string) error {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	names, err := entries(root, ".")
	if err != nil {
		return err
	}
	for _, n := range names {
		if filepath.Join(dir, n) == keep {
			continue
		}
		if err := scrub(root, n); err != nil {
			return err
		}
	}
	return nil
}

// maxScrubDepth bounds the directories scrub opens one inside another.
const maxScrubDepth = 1024

// scrub removes name in root and all it holds: at once when it can, else
// making each directory its owner's to read and change first.
func scrub(root *os.Root, name string) error {
	if root.RemoveAll(name) == nil {
		return nil
	}
	return unlock(root, name, 0)
}

// unlock removes name in root and all it holds, opening each directory
// from its parent's handle, so a deep tree costs no more than a wide one.
func unlock(root *os.Root, name string, depth int) error {
	fi, err := root.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if depth >= maxScrubDepth {
			return fmt.Errorf("%s holds directories nested more than %d deep, which are not removed", name, maxScrubDepth)
		}
		if err := root.Chmod(name, 0o700); err != nil {
			return err
		}
		sub, err := root.OpenRoot(name)
		if err != nil {
			return err
		}
		names, err := entries(sub, ".")
		for _, n := range names {
			if err != nil {
				break
			}
			err = unlock(sub, n, depth+1)
		}
		sub.Close()
		if err != nil {
			return err
		}
	}
	return root.Remove(name)
}

// entries are the names in directory name of root.
func entries(root *os.Root, name string) ([]string, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// sweep kills every process but the executor, PID 1 of the pod's PID
// namespace, and reaps them. kill(-1) signals them all at once: the
// kernel walks the processes under one lock that fork takes too, and a
// process with SIGKILL pending does not fork, so no child escapes.
func (s *Server) sweep() {
	if err := unix.Kill(-1, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		s.Logger.Warn("killing what the command left", "err", err)
	}
	// What was killed is reaped: orphans are PID 1's children. A process
	// stuck in the kernel may take a while to die; it cannot run again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return
		case err != nil && !errors.Is(err, unix.EINTR):
			s.Logger.Warn("reaping what the command left", "err", err)
			return
		case pid == 0:
			if time.Now().After(deadline) {
				s.Logger.Warn("processes the command left are killed but not yet gone")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

type frameWriter struct {
	send func(Frame)
	err  bool
}

func (f frameWriter) Write(p []byte) (int, error) {
	f.send(Frame{Out: append([]byte(nil), p...), Err: f.err})
	return len(p), nil
}

// Key is the executor's TLS certificate, made at its first start and kept
// in state (on the pod's volume), so the worker that pinned it on first
// contact recognises it after the pod comes back.
func Key(state string) (tls.Certificate, error) {
	file := filepath.Join(state, "key.pem")
	if b, err := os.ReadFile(file); err == nil {
		cert, err := tls.X509KeyPair(b, b)
		if err != nil {
			return cert, fmt.Errorf("the executor's key %s: %w", file, err)
		}
		return cert, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "paddock-executor"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(20, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	b := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(b, b)
}

// Fingerprint names a certificate's public key: the SHA-256 of its
// SubjectPublicKeyInfo, in hex.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}
