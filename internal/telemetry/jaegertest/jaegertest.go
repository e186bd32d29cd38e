// Package jaegertest runs a real Jaeger (the OTLP receiver and the query
// API, traces in memory) on loopback for a test, and reads the traces it
// received. The binary is built by test/jaeger/build.sh into
// /var/cache/paddock-jaeger; without it the test skips, naming the script.
package jaegertest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Version is the Jaeger test/jaeger/build.sh builds.
const Version = "1.75.0"

// Binary is where test/jaeger/build.sh puts Jaeger.
var Binary = filepath.Join("/var/cache/paddock-jaeger", "jaeger-"+Version)

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLP is its OTLP/HTTP receiver's base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
	OTLP string
	// Query is its query API's base URL.
	Query string
}

// Start starts a Jaeger for t, stopped when t ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("no Jaeger at %s: run test/jaeger/build.sh (.ci/run does)", Binary)
	}
	ports := freePorts(t, 4)
	dir := t.TempDir()
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, ports[0], ports[1], ports[2], ports[3])
	path := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Binary, "--config", path)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("jaeger's log:\n%s", data)
		}
	})
	j := &Jaeger{OTLP: fmt.Sprintf("http://127.0.0.1:%d", ports[3]), Query: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.Query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer at %s: %v", j.Query, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts are n loopback ports free now.
func freePorts(t testing.TB, n int) []int {
	var out []int
	var held []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range held {
		ln.Close()
	}
	return out
}

// Span is a span as Jaeger's query API returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	ProcessID string `json:"processID"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

// Parent is the span's parent's ID ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag is a tag's value as text ("" when absent).
func (s Span) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			switch v := t.Value.(type) {
			case string:
				return v
			case float64:
				return strconv.FormatFloat(v, 'f', -1, 64)
			default:
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// Trace is one trace: its spans and the processes (nodes) that sent them.
type Trace struct {
	Spans     []Span `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
		Tags        []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"processes"`
}

// Trace reads trace id (hex) as it is now: zero spans when Jaeger has none.
func (j *Jaeger) Trace(id string) (Trace, error) {
	resp, err := http.Get(j.Query + "/api/traces/" + id)
	if err != nil {
		return Trace{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return Trace{}, nil
	}
	var body struct {
		Data []Trace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return Trace{}, err
	}
	if len(body.Data) == 0 {
		return Trace{}, nil
	}
	return body.Data[0], nil
}

// Instance is the service.instance.id of the process that sent span s.
func (tr Trace) Instance(s Span) string {
	for _, tag := range tr.Processes[s.ProcessID].Tags {
		if tag.Key == "service.instance.id" {
			return fmt.Sprint(tag.Value)
		}
	}
	return ""
}
