package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.temporal.io/sdk/client"
)

// Temporal is the Temporal SDK's metrics handler: of what the SDK
// reports, this node's task queue lag (schedule to start), task
// execution time and failures, and its sticky cache's size; the rest,
// and every tag, is dropped (a workflow type or task queue per series
// is not an operator's concern, and their number is not bounded here).
func (m *Metrics) Temporal() client.MetricsHandler { return temporalHandler{m} }

type temporalHandler struct{ m *Metrics }

// The SDK's metrics kept, by the kind of task each is about.
var (
	failures = map[string]string{
		"temporal_workflow_task_execution_failed":  "workflow",
		"temporal_activity_execution_failed":       "activity",
		"temporal_local_activity_execution_failed": "local_activity",
	}
	lags = map[string]string{
		"temporal_workflow_task_schedule_to_start_latency": "workflow",
		"temporal_activity_schedule_to_start_latency":      "activity",
	}
	executions = map[string]string{
		"temporal_workflow_task_execution_latency":  "workflow",
		"temporal_activity_execution_latency":       "activity",
		"temporal_local_activity_execution_latency": "local_activity",
	}
)

func (h temporalHandler) WithTags(map[string]string) client.MetricsHandler { return h }

func (h temporalHandler) Counter(name string) client.MetricsCounter {
	kind := failures[name]
	if kind == "" {
		return client.MetricsNopHandler.Counter(name)
	}
	c := h.m.taskFailures.WithLabelValues(kind)
	return counterFunc(func(n int64) { c.Add(float64(n)) })
}

func (h temporalHandler) Gauge(name string) client.MetricsGauge {
	if name != "temporal_sticky_cache_size" {
		return client.MetricsNopHandler.Gauge(name)
	}
	return gaugeFunc(h.m.stickyCache.Set)
}

func (h temporalHandler) Timer(name string) client.MetricsTimer {
	if kind := lags[name]; kind != "" {
		o := h.m.queueLag.WithLabelValues(kind)
		return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
	}
	if kind := executions[name]; kind != "" {
		o := h.m.taskSeconds.WithLabelValues(kind)
		return timerFunc(func(d time.Duration) { o.Observe(d.Seconds()) })
	}
	return client.MetricsNopHandler.Timer(name)
}

type (
	counterFunc func(int64)
	gaugeFunc   func(float64)
	timerFunc   func(time.Duration)
)

func (f counterFunc) Inc(n int64)          { f(n) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }

// QueueLag is how long tasks waited in this node's Temporal task queues
// at the 99th percentile since it started (the upper bound of the bucket
// holding it), workflow and activity tasks together; false before any.
func (m *Metrics) QueueLag() (time.Duration, bool) {
	var count uint64
	cumulative := map[float64]uint64{}
	for _, kind := range []string{"workflow", "activity"} {
		var d dto.Metric
		if err := m.queueLag.WithLabelValues(kind).(prometheus.Histogram).Write(&d); err != nil {
			continue
		}
		count += d.Histogram.GetSampleCount()
		for _, b := range d.Histogram.Bucket {
			cumulative[b.GetUpperBound()] += b.GetCumulativeCount()
		}
	}
	if count == 0 {
		return 0, false
	}
	for _, bound := range secondsBuckets {
		if float64(cumulative[bound]) >= 0.99*float64(count) {
			return time.Duration(bound * float64(time.Second)), true
		}
	}
	return time.Duration(secondsBuckets[len(secondsBuckets)-1] * float64(time.Second)), true
}
