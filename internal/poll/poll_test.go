package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context: %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
}

func TestUntil(t *testing.T) {
	n := 0
	err := Until(context.Background(), time.Millisecond, func() (bool, error) { n++; return n == 3, nil })
	if err != nil || n != 3 {
		t.Fatalf("Until: %v after %d checks, want nil after 3", err, n)
	}
	boom := errors.New("boom")
	if err := Until(context.Background(), time.Millisecond, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("Until: %v, want the check's error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Until(ctx, time.Millisecond, func() (bool, error) { return false, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Until past its deadline: %v", err)
	}
}
