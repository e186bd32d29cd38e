package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
	"github.com/paddock-dev/paddock/internal/workspace"
)

// BenchmarkSessionStart measures a session's start on the embedded server
// for a repository of 2 files and of 20,000 files (151 MB, as issue 37
// measured): from the API's create to the model's first answer recorded
// (the replay model answers at once, so this bounds the time to its first
// request), and the working copy's preparation as its phase records it.
// An agent that runs commands gets a volume; one that does not, a
// directory. The first session of a repository makes its shared checkout
// (reported as first-ms); the medians are of the sessions after it.
func BenchmarkSessionStart(b *testing.B) {
	ctx := context.Background()
	for _, files := range []int{2, 20000} {
		repo := benchRepository(b, files, 151<<20/20000)
		for _, commands := range []bool{true, false} {
			b.Run(fmt.Sprintf("files=%d/commands=%t", files, commands), func(b *testing.B) {
				agent := unique("starter")
				yaml := "name: " + agent + "\nproject: default\nmodel: " + script(b, "empty.yaml") + "\n"
				if !commands {
					yaml += "tools: [read_file, list_dir]\n"
				}
				if _, err := api.Projects().Apply(ctx, []byte(yaml)); err != nil {
					b.Fatal(err)
				}
				start := func() (answer, prep time.Duration) {
					began := time.Now()
					x, err := api.Sessions().Create(ctx, wire.CreateRequest{Agent: agent, Repo: repo, Message: "hello"})
					if err != nil {
						b.Fatal(err)
					}
					ch, cancel := shared.Service.Store.Subscribe(x.ID)
					defer cancel()
					var after int64
					for answer == 0 {
						events, err := shared.Service.Store.ListEvents(ctx, x.ID, after, 0)
						if err != nil {
							b.Fatal(err)
						}
						for _, e := range events {
							after = e.Seq
							var p session.PhaseData
							switch {
							case e.Kind == session.EventPhase && json.Unmarshal(e.Data, &p) == nil && p.Phase == session.PhasePreparingEnvironment:
								if p.Error != "" {
									b.Fatal(p.Error)
								}
								prep = time.Duration(p.DurationMs) * time.Millisecond
							case e.Kind == session.EventAssistantMessage:
								answer = time.Since(began)
							}
						}
						select {
						case <-ch:
						case <-time.After(2 * time.Millisecond): // a notification between list and subscribe
						}
						if time.Since(began) > 5*time.Minute {
							b.Fatal("no answer within 5 minutes")
						}
					}
					b.StopTimer()
					if _, err := api.Sessions().Send(ctx, x.ID, wire.SendRequest{Kind: session.KindStop}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					return answer, prep
				}
				first, _ := start()
				var answers, copies []time.Duration
				b.ResetTimer()
				for b.Loop() {
					a, c := start()
					answers, copies = append(answers, a), append(copies, c)
				}
				b.StopTimer()
				slices.Sort(answers)
				slices.Sort(copies)
				b.ReportMetric(float64(first.Milliseconds()), "first-ms")
				b.ReportMetric(float64(answers[len(answers)/2].Microseconds())/1000, "answer-p50-ms")
				b.ReportMetric(float64(copies[len(copies)/2].Milliseconds()), "copy-p50-ms")
			})
		}
	}
}

// benchRepository makes a repository of n files of size bytes each, in
// directories of 100.
func benchRepository(b *testing.B, n, size int) string {
	b.Helper()
	dir := dataDir(b)
	data := make([]byte, size)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%05d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		copy(data, fmt.Sprintf("%d\n", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "files"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatal(string(out))
		}
	}
	// As a repository that has sat a while: git finds no file "racily
	// clean", which it would hash again at every status.
	if err := workspace.Settle(context.Background(), dir); err != nil {
		b.Fatal(err)
	}
	return dir
}
