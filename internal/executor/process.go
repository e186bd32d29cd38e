package executor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/paddock-dev/paddock/internal/sandbox"
)

// A long-lived process (a stdio MCP server) talks over its standard input
// and output for as long as the worker keeps one request open: the
// request's body, after a first line saying what to start, is the
// process's input, and the answer's body its output. The request's end
// (the worker closing the input, or going away) ends the process.

// StartRequest is the first line of a start request.
type StartRequest struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	// Deps says the process uses the dependency caches (read-only, as
	// for commands: what it changes there is undone by the next push).
	Deps bool `json:"deps,omitempty"`
}

// maxStartLine bounds the first line of a start request.
const maxStartLine = 1 << 20

// processGrace is how long a process whose input ended has to exit before
// it is killed.
const processGrace = 2 * time.Second

// startWait is how long the worker waits for the executor to start a
// long-lived process (or refuse to); a variable for tests.
var startWait = time.Minute

// start runs a long-lived process for the request's time, as a command
// runs: in the working copy, the scratch directories fresh, and every
// process it left killed after.
func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := bufio.NewReaderSize(r.Body, maxStartLine)
	line, err := in.ReadSlice('\n')
	var req StartRequest
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("the process to start, a line of JSON (at most %d bytes): %w", in.Size(), err))
		return
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		fail(w, http.StatusBadRequest, errors.New("the process to start names no program"))
		return
	}
	if err := s.fresh(false); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	vars := sandbox.Environment(req.Env)
	if req.Deps {
		maps.Copy(vars, sandbox.DepsEnv(s.Deps))
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, req.Argv[0], req.Argv[1:]...)
	cmd.Dir, cmd.Env = s.Workdir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = processGrace // a child holding its output open does not hold the answer
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	out := &flushWriter{w: w, rc: http.NewResponseController(w)}
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		fail(w, http.StatusBadRequest, fmt.Errorf("start %s: %w", req.Argv[0], err))
		if s.Alone {
			s.sweep()
		}
		return
	}
	s.Logger.Info("process started", "program", req.Argv[0])
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_ = out.rc.Flush()
	// The input is copied by a goroutine of its own, so the process's
	// end does not wait for the worker's; its end (EOF) closes the
	// process's input, and the process has processGrace to exit.
	go func() {
		_, _ = io.Copy(stdin, in)
		_ = stdin.Close()
		select {
		case <-ctx.Done():
		case <-time.After(processGrace):
			cancel()
		}
	}()
	err = cmd.Wait()
	cancel()
	if s.Alone {
		s.sweep()
	}
	s.Logger.Info("process ended", "program", req.Argv[0], "err", err)
}

// flushWriter sends each write of the process's output at once.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// Process is a long-lived process running in the pod: its input and
// output. Closing either ends it (and the request); Out ends with it.
type Process struct {
	In  io.WriteCloser
	Out io.ReadCloser
}

// Start starts a long-lived process in the pod, which lives until its
// input is closed or ctx ends.
func (c *Client) Start(ctx context.Context, req StartRequest) (*Process, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	// The transport's wait for the answer's header starts only once the
	// request's body has ended, which this one does not: the executor
	// answers (or refuses, saying why) within startWait, or the request
	// ends.
	late := time.AfterFunc(startWait, func() {
		cancel()
		_ = pw.Close() // the transport ends the request only once its body has
	})
	resp, err := c.send(ctx, http.MethodPost, "/v1/start", "application/octet-stream", io.MultiReader(bytes.NewReader(append(line, '\n')), pr))
	if err == nil && resp.StatusCode/100 != 2 {
		_ = pw.Close() // the refusal's body ends only once the request's has
		err = refused(resp)
	}
	if !late.Stop() {
		if err == nil {
			_ = resp.Body.Close()
		}
		err = fmt.Errorf("the sandbox's executor at %s did not start the process within %s", c.addr, startWait)
	}
	if err != nil {
		cancel()
		_ = pw.Close()
		return nil, err
	}
	// The request's end, whoever ends it: the input closed, or ctx.
	var once sync.Once
	end := func() {
		once.Do(func() {
			_ = pw.Close()
			_ = resp.Body.Close()
			cancel()
		})
	}
	context.AfterFunc(ctx, end)
	return &Process{In: &processInput{PipeWriter: pw, end: end}, Out: &processOutput{ReadCloser: resp.Body, end: end}}, nil
}

// processInput ends the process's request when it is closed: the input
// ends, and with the answer's body closed the executor kills the process
// at once, so whatever the worker does next in the pod waits for nothing.
type processInput struct {
	*io.PipeWriter
	end func()
}

func (p *processInput) Close() error {
	err := p.PipeWriter.Close()
	p.end()
	return err
}

// processOutput ends the request too when it is closed: the answer's body
// closes only once the request's has ended.
type processOutput struct {
	io.ReadCloser
	end func()
}

func (p *processOutput) Close() error {
	p.end()
	return nil
}
