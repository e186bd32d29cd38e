package liveoutput

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paddock-dev/paddock/internal/session"
)

// TestLiveOutput: a running command's output is recorded in order, whole
// lines while it runs, the rest at its end; a credential is masked even
// when the command writes it in pieces; the live output stops at its
// bound, saying so once.
func TestLiveOutput(t *testing.T) {
	var mu sync.Mutex
	var got []session.OutputData
	var seqs []int
	secret := "s3cr3t-value-123"
	l := New("call_1", map[string]string{"TOKEN": secret}, func(seq int, d session.OutputData) {
		mu.Lock()
		defer mu.Unlock()
		got, seqs = append(got, d), append(seqs, seq)
	})
	_, _ = l.Write([]byte("first line\nsecond "))
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	}, 10*time.Second, 10*time.Millisecond, "a whole line is recorded while the command runs")
	mu.Lock()
	require.Equal(t, "first line\n", got[0].Text)
	mu.Unlock()
	_, _ = l.Write([]byte("half, then the token s3cr3t-"))
	_, _ = l.Write([]byte("value-123 and no newline"))
	l.Close()
	var all strings.Builder
	for _, d := range got {
		all.WriteString(d.Text)
	}
	require.Equal(t, "first line\nsecond half, then the token [REDACTED:credential TOKEN] and no newline", all.String())
	require.Equal(t, []int{0, 1}, seqs)

	// A long line without an end goes out in pieces that never split the
	// secret; past the bound nothing more is recorded, and Cut says so once.
	got, seqs = nil, nil
	l = New("call_2", map[string]string{"TOKEN": secret}, func(seq int, d session.OutputData) {
		mu.Lock()
		defer mu.Unlock()
		got, seqs = append(got, d), append(seqs, seq)
	})
	chunk := strings.Repeat("x", 1000) + secret
	for range 400 {
		_, _ = l.Write([]byte(chunk))
	}
	l.Close()
	var total, cuts int
	for _, d := range got {
		require.NotContains(t, d.Text, secret)
		total += len(strings.ReplaceAll(d.Text, "[REDACTED:credential TOKEN]", secret))
		if d.Cut {
			cuts++
		}
	}
	require.Equal(t, 1, cuts, "the bound is said once")
	require.True(t, got[len(got)-1].Cut)
	require.Equal(t, session.MaxLiveOutput, total, "live output up to its bound, no more")
	for i, s := range seqs {
		require.Equal(t, i, s)
	}
}

// TestLiveOutputNeverSplitsAValue: the attacks of the review: a value
// whose end is its own start, two values where one's end starts the
// other, and a value cut by the bound; none reaches an event in part.
func TestLiveOutputNeverSplitsAValue(t *testing.T) {
	for name, tc := range map[string]struct {
		creds  map[string]string
		writes []string
		leak   []string
	}{
		"end is its own start":       {map[string]string{"T": "Zk9pQ2xhbmdZ"}, []string{strings.Repeat("x", 5000) + "Zk9pQ2xhbmdZ", "\n"}, []string{"Zk9pQ2xhbmd"}},
		"one's end starts the other": {map[string]string{"A": "abcd1234", "B": "1234wxyz"}, []string{strings.Repeat("x", 5000) + "abcd1234", "wxyz\n"}, []string{"abcd", "wxyz"}},
		"cut by the bound":           {map[string]string{"T": "s3cr3t-value-123"}, []string{strings.Repeat("y", session.MaxLiveOutput-10) + "s3cr3t-value-123\n"}, []string{"s3cr3t"}},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var all strings.Builder
			l := New("c", tc.creds, func(_ int, d session.OutputData) {
				mu.Lock()
				defer mu.Unlock()
				all.WriteString(d.Text)
			})
			for _, w := range tc.writes {
				_, _ = l.Write([]byte(w))
				l.flush(false) // as the ticker would, between writes
			}
			l.Close()
			for _, leak := range tc.leak {
				require.NotContains(t, all.String(), leak)
			}
		})
	}
}
