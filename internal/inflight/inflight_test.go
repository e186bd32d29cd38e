package inflight

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
)

// TestInflightOutlivesALapsedAttempt: a run whose attempt Temporal gave up
// on (the context ends with NotFound, as the SDK ends it when a heartbeat
// finds the attempt gone) keeps running, and the next attempt waits for
// it; an interrupt or stop (any other cause) ends the run.
func TestInflightOutlivesALapsedAttempt(t *testing.T) {
	var f Runs
	first, give := context.WithCancelCause(context.Background())
	rctx, landed := f.Start(first, "run-1")
	give(serviceerror.NewNotFound("activity task not found"))
	select {
	case <-rctx.Done():
		t.Fatal("a lapsed attempt must not end its run")
	case <-time.After(50 * time.Millisecond):
	}
	waited := make(chan bool)
	go func() { waited <- f.Await(context.Background(), "run-1") }()
	select {
	case <-waited:
		t.Fatal("the next attempt returned while the run still ran")
	case <-time.After(50 * time.Millisecond):
	}
	landed()
	require.True(t, <-waited, "the next attempt waited for the run")
	require.False(t, f.Await(context.Background(), "run-1"), "an ended run is no longer held")

	// A stop cancels the attempt's context: the run ends with it.
	second, stop := context.WithCancelCause(context.Background())
	rctx, landed = f.Start(second, "run-2")
	defer landed()
	stop(errors.New("canceled by a stop"))
	select {
	case <-rctx.Done():
		require.EqualError(t, context.Cause(rctx), "canceled by a stop")
	case <-time.After(10 * time.Second):
		t.Fatal("a stopped attempt's run did not end")
	}

	// A stop reaching the waiting attempt ends the run it waits for.
	third, end := context.WithCancelCause(context.Background())
	defer end(nil)
	rctx, landed3 := f.Start(third, "run-3")
	waiting, stopWait := context.WithCancelCause(context.Background())
	go func() { waited <- f.Await(waiting, "run-3") }()
	stopWait(errors.New("canceled by a stop"))
	<-rctx.Done()
	landed3()
	require.True(t, <-waited)
}
