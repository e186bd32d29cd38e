package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// BenchmarkIdleSessions makes PADDOCK_BENCH_SESSIONS sessions (default
// 1,000) idle on one `paddock serve` process: each created through the
// API, through one replay turn, then awaiting. Their agent may run
// commands, so each makes and mounts a volume first, unless
// PADDOCK_BENCH_COMMANDS=false (then its tools only read). It reports the server's
// memory and mounts then, its CPU over PADDOCK_BENCH_IDLE (default 10 s)
// of idleness, the time from a restart to /healthz, and the wake of idle
// sessions after it (a message → its turn accepted, p50 and p90 of 20).
func BenchmarkIdleSessions(b *testing.B) {
	n := benchEnv("PADDOCK_BENCH_SESSIONS", 1000)
	idle := time.Duration(benchEnv("PADDOCK_BENCH_IDLE", 10)) * time.Second
	ctx := context.Background()
	for b.Loop() {
		dir := dataDir(b)
		child, c := serveChild(b, dir)
		// An agent that may run commands (so each session has a volume)
		// and is idle after 5 s (so its volume is let go).
		agent := "name: idler\nproject: idle\nmodel: " + scriptIn(b, dir, "empty.yaml") + "\nsession:\n  idleTimeout: 5s\n"
		if os.Getenv("PADDOCK_BENCH_COMMANDS") == "false" {
			agent += "tools: [read_file, list_dir]\n"
		}
		if _, err := c.Projects().Apply(ctx, []byte(agent)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		ids := make(chan string, n)
		var wg sync.WaitGroup
		var failed error
		var once sync.Once
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range n / 8 {
					x, err := c.Sessions().Create(ctx, wire.CreateRequest{Agent: "idler", Message: "hello", Project: "idle"})
					if err != nil {
						once.Do(func() { failed = err })
						return
					}
					ids <- x.ID
				}
			}()
		}
		wg.Wait()
		close(ids)
		if failed != nil {
			b.Fatal(failed)
		}
		made := time.Since(start)
		var all []string
		for id := range ids {
			all = append(all, id)
		}
		count := func(status session.Status, each func(session.Session)) int {
			count, before := 0, ""
			for {
				page, err := c.Sessions().List(ctx, session.Filter{Project: "idle", Status: status, Limit: session.MaxPage, Before: before})
				if err != nil {
					b.Fatal(err)
				}
				for _, x := range page {
					each(x)
				}
				count += len(page)
				if len(page) < session.MaxPage {
					return count
				}
				before = page[len(page)-1].ID
			}
		}
		reaped := func(x session.Session) bool { return x.AmbientStatus == "idle (sandbox released)" }
		deadline := time.Now().Add(time.Hour)
		for {
			idle := 0
			if count(session.StatusAwaiting, func(x session.Session) {
				if reaped(x) {
					idle++
				}
			}) == len(all) && idle == len(all) {
				break
			}
			var why string
			if failed := count(session.StatusFailed, func(x session.Session) { why = x.Error }); failed > 0 {
				b.Fatalf("%d sessions failed, one with: %s", failed, why)
			}
			if time.Now().After(deadline) {
				b.Fatal("the sessions never all awaited")
			}
			time.Sleep(time.Second)
		}
		b.ReportMetric(float64(len(all)), "sessions")
		b.ReportMetric(made.Seconds(), "create-s")
		b.ReportMetric(time.Since(start).Seconds(), "all-idle-s") // awaiting, and released after their 5 s
		b.ReportMetric(procKiB(child.Process.Pid, "VmRSS:")/1024, "rss-MiB")
		b.ReportMetric(procKiB(child.Process.Pid, "Threads:"), "threads")
		b.ReportMetric(float64(mounts(dir)), "mounts")
		cpu := cpuTime(child.Process.Pid)
		time.Sleep(idle)
		b.ReportMetric(100*(cpuTime(child.Process.Pid)-cpu).Seconds()/idle.Seconds(), "idle-cpu-%")

		// A restart: SIGTERM, then the same data directory served again.
		_ = child.Process.Signal(syscall.SIGTERM)
		_, _ = child.Process.Wait()
		restarted := time.Now()
		child, c = serveChild(b, dir)
		b.ReportMetric(time.Since(restarted).Seconds(), "restart-to-healthz-s")
		b.ReportMetric(procKiB(child.Process.Pid, "VmRSS:")/1024, "rss-after-restart-MiB")
		var wakes []time.Duration
		for _, id := range all[:min(20, len(all))] {
			sent := time.Now()
			cmd, err := c.Sessions().Send(ctx, id, wire.SendRequest{Kind: session.KindMessage, Payload: json.RawMessage(`{"message":"again"}`)})
			if err != nil {
				b.Fatal(err)
			}
			for {
				cmds, err := c.Sessions().Commands(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if i := slices.IndexFunc(cmds, func(x session.Command) bool { return x.ID == cmd.ID }); i >= 0 && cmds[i].State == session.CommandAccepted {
					break
				}
				if time.Since(sent) > time.Minute {
					b.Fatalf("session %s's message was not taken within a minute", id)
				}
				time.Sleep(5 * time.Millisecond)
			}
			wakes = append(wakes, time.Since(sent))
		}
		slices.Sort(wakes)
		b.ReportMetric(float64(wakes[len(wakes)/2].Milliseconds()), "wake-p50-ms")
		b.ReportMetric(float64(wakes[len(wakes)*9/10].Milliseconds()), "wake-p90-ms")
	}
}

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// procKiB is a figure of /proc/PID/status (kB, or a count).
func procKiB(pid int, field string) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return v
		}
	}
	return 0
}

// cpuTime is the process's user and system time.
func cpuTime(pid int) time.Duration {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// mounts counts the mounts under dir.
func mounts(dir string) int {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	return strings.Count(string(data), " "+dir+"/")
}
