// Package telemetry is what operators watch a Paddock node with:
// Prometheus metrics (derived from the record as it is written, from the
// sandbox's commands, the model calls and the Temporal SDK), the API's
// access log, structured logs that never carry a secret, and profiles.
//
// Labels are bounded: no session, turn or call ID is ever a label, tool
// names are the known tools' (others count as "other"), rule names are
// cut to their family.
package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/store"
	"github.com/paddock-dev/paddock/internal/tool"
)

// Namespace prefixes every Paddock metric.
const Namespace = "paddock"

// Census counts what the deployment holds (store.Store's Census).
type Census interface {
	Census(ctx context.Context) (store.Census, error)
}

// Metrics is one node's metrics and the registry that serves them.
type Metrics struct {
	Registry *prometheus.Registry

	events         *prometheus.CounterVec
	turns          *prometheus.CounterVec
	gate           *prometheus.CounterVec
	outcomes       *prometheus.CounterVec
	approvals      *prometheus.CounterVec
	decision       *prometheus.HistogramVec
	parks          *prometheus.CounterVec
	extensions     prometheus.Counter
	egress         *prometheus.CounterVec
	egressBytes    *prometheus.CounterVec
	phases         *prometheus.HistogramVec
	cost           *prometheus.CounterVec
	storeSeconds   *prometheus.HistogramVec
	auditEntries   prometheus.Counter
	auditBroken    prometheus.Counter
	commands       *prometheus.CounterVec
	commandSeconds prometheus.Histogram
	commandCPU     prometheus.Counter
	commandMemory  prometheus.Histogram
	commandWritten prometheus.Counter
	modelCalls     *prometheus.CounterVec
	modelSeconds   *prometheus.HistogramVec
	modelFirst     *prometheus.HistogramVec
	modelTokens    *prometheus.CounterVec
	httpRequests   *prometheus.CounterVec
	httpSeconds    *prometheus.HistogramVec
	queueLag       *prometheus.HistogramVec
	taskFailures   *prometheus.CounterVec
	taskSeconds    *prometheus.HistogramVec
	stickyCache    prometheus.Gauge
	censusFailures prometheus.Counter
	tools          tool.Set
	models         *capped
	censusTimeout  time.Duration
	logger         *slog.Logger
	tracer         trace.Tracer
	turnReader     Turns
}

// Turns reads a turn (its start, for its trace's root span).
type Turns interface {
	GetTurn(ctx context.Context, id string) (session.Turn, error)
}

// Options configure New.
type Options struct {
	// Node names this node (a constant label of paddock_node_info).
	Node string
	// Version is the program's version.
	Version string
	// Census, when set, is asked at every scrape for the sessions by
	// status, the open parks, the approvals waiting and the nodes.
	Census Census
	// Tools are the tools counted by name (tool.Set.Label: MCP tools
	// count as "mcp", any other name as "other").
	Tools tool.Set
	// Logger is told when a census fails (nil: not told).
	Logger *slog.Logger
	// Tracer traces API requests, model calls, commands, approval waits
	// and turns (nil: nothing is traced); Turns reads a turn's start.
	Tracer trace.Tracer
	Turns  Turns
}

// secondsBuckets spans a fast store write to a long command.
var secondsBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// New makes a node's metrics in a registry of their own, with the Go
// runtime's and the process's collectors.
func New(o Options) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), tools: o.Tools, models: &capped{max: maxModels}, censusTimeout: 5 * time.Second, logger: o.Logger,
		tracer: o.Tracer, turnReader: o.Turns}
	if m.tracer == nil {
		m.tracer = noop.NewTracerProvider().Tracer("")
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	m.events = counter("events_total", "Transcript events written (each is an audit entry), by kind.", "kind")
	m.turns = counter("turns_total", "Turns that changed status, by the status reached (in_progress: started).", "status")
	m.gate = counter("tool_calls_total", "Tool calls the policy gate decided, by tool, verdict and rule family.", "tool", "verdict", "rule_family")
	m.outcomes = counter("tool_call_outcomes_total", "Tool calls that ended, by tool and final state.", "tool", "outcome")
	m.approvals = counter("approvals_total", "Approvals asked (outcome asked) and settled (approved, rejected, expired).", "outcome")
	m.decision = histogram("approval_decision_seconds", "Time from an approval asked to its decision, by outcome.", []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}, "outcome")
	m.parks = counter("parks_total", "Sessions parked, by reason (budget exhaustion among them).", "reason")
	m.extensions = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "budget_extensions_total", Help: "Budget extensions granted."})
	m.egress = counter("egress_connections_total", "Connections sandboxed processes made through the egress proxy, by phase and whether they were allowed.", "phase", "allowed")
	m.egressBytes = counter("egress_bytes_total", "Bytes through the egress proxy, by direction.", "direction")
	m.phases = histogram("provision_phase_seconds", "Provisioning phases of sessions, by phase.", secondsBuckets, "phase")
	m.cost = counter("model_cost_usd_total", "Model spend recorded, in US dollars, by provider and model.", "provider", "model")
	m.storeSeconds = histogram("store_seconds", "Latency of the store's operations, by operation.", secondsBuckets, "op")
	m.auditEntries = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "audit_entries_total", Help: "Audit entries written (one per transcript event)."})
	m.auditBroken = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "audit_verification_failures_total", Help: "Audit logs a verification found broken."})
	m.commands = counter("commands_total", "Sandboxed commands, by outcome (ok, failed: a non-zero exit, timed_out, error: not run).", "outcome")
	m.commandSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "command_seconds", Help: "Wall time of sandboxed commands.", Buckets: secondsBuckets})
	m.commandCPU = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "command_cpu_seconds_total", Help: "Processor time sandboxed commands used (user and system, every process)."})
	m.commandMemory = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "command_peak_memory_bytes", Help: "Largest resident set of any process of a sandboxed command.",
		Buckets: prometheus.ExponentialBuckets(1<<20, 4, 10)})
	m.commandWritten = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "command_written_bytes_total", Help: "Bytes sandboxed commands wrote to block devices."})
	m.modelCalls = counter("model_calls_total", "Model calls, by provider, model and outcome (ok, or the failure's class).", "provider", "model", "outcome")
	m.modelSeconds = histogram("model_call_seconds", "Duration of model calls, by provider and model.", secondsBuckets, "provider", "model")
	m.modelFirst = histogram("model_first_token_seconds", "Time from a model call to its first streamed fragment, by provider and model.", secondsBuckets, "provider", "model")
	m.modelTokens = counter("model_tokens_total", "Tokens of model calls, by provider, model and direction (input, output).", "provider", "model", "direction")
	m.httpRequests = counter("http_requests_total", "API and web requests, by route and status class.", "route", "code")
	m.httpSeconds = histogram("http_request_seconds", "Latency of API and web requests, by route.", secondsBuckets, "route")
	m.queueLag = histogram("temporal_queue_lag_seconds", "Time tasks waited in Temporal task queues before a worker of this node took them (schedule to start), by kind.", secondsBuckets, "kind")
	m.taskFailures = counter("temporal_task_failures_total", "Workflow and activity tasks that failed on this node, by kind.", "kind")
	m.taskSeconds = histogram("temporal_task_seconds", "Execution time of workflow and activity tasks on this node, by kind.", secondsBuckets, "kind")
	m.stickyCache = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "temporal_sticky_cache_size", Help: "Workflows held in this node's sticky cache."})
	m.censusFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "census_failures_total", Help: "Scrapes whose census of the store failed (the census gauges are then absent)."})
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "node_info", Help: "This node, by name and version.",
		ConstLabels: prometheus.Labels{"node": o.Node, "version": o.Version}})
	info.Set(1)
	m.Registry.MustRegister(m.events, m.turns, m.gate, m.outcomes, m.approvals, m.decision, m.parks, m.extensions, m.egress, m.egressBytes,
		m.phases, m.cost, m.storeSeconds, m.auditEntries, m.auditBroken, m.commands, m.commandSeconds, m.commandCPU, m.commandMemory,
		m.commandWritten, m.modelCalls, m.modelSeconds, m.modelFirst, m.modelTokens, m.httpRequests, m.httpSeconds, m.queueLag,
		m.taskFailures, m.taskSeconds, m.stickyCache, m.censusFailures, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Census != nil {
		m.Registry.MustRegister(&census{m: m, c: o.Census})
	}
	return m
}

// AuditBroken counts a verification that found a log broken.
func (m *Metrics) AuditBroken() {
	if m != nil {
		m.auditBroken.Inc()
	}
}

// census is the collector asking the store, at most every 5 seconds
// (scrapes in between, from several Prometheus servers say, are given
// the last answer).
type census struct {
	m    *Metrics
	c    Census
	mu   sync.Mutex
	at   time.Time
	last store.Census
}

var (
	sessionsDesc  = prometheus.NewDesc(Namespace+"_sessions", "Sessions not archived, by status.", []string{"status"}, nil)
	parkedDesc    = prometheus.NewDesc(Namespace+"_sessions_parked", "Sessions parked now, by reason.", []string{"reason"}, nil)
	approvalsDesc = prometheus.NewDesc(Namespace+"_approvals_waiting", "Approvals waiting for a person.", nil, nil)
	oldestDesc    = prometheus.NewDesc(Namespace+"_approval_oldest_waiting_seconds", "How long the oldest approval waiting has waited (0: none waits).", nil, nil)
	nodesDesc     = prometheus.NewDesc(Namespace+"_cluster_nodes", "Nodes holding the database (1 for a lone node).", nil, nil)
)

func (c *census) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- parkedDesc
	ch <- approvalsDesc
	ch <- oldestDesc
	ch <- nodesDesc
}

func (c *census) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= 5*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), c.m.censusTimeout)
		defer cancel()
		n, err := c.c.Census(ctx)
		if err != nil {
			c.m.censusFailures.Inc()
			if c.m.logger != nil {
				c.m.logger.Warn("metrics: the store's census failed", "err", err)
			}
			return
		}
		c.at, c.last = time.Now(), n
	}
	n := c.last
	for status, count := range n.Sessions {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(count), string(status))
	}
	for reason, count := range n.Parked {
		ch <- prometheus.MustNewConstMetric(parkedDesc, prometheus.GaugeValue, float64(count), reason)
	}
	ch <- prometheus.MustNewConstMetric(approvalsDesc, prometheus.GaugeValue, float64(n.Approvals))
	oldest := 0.0
	if !n.OldestApproval.IsZero() {
		oldest = time.Since(n.OldestApproval).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest)
	ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(n.Nodes))
}
