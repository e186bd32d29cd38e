package terminal

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/internal/clip"
	"github.com/paddock-dev/paddock/internal/forge"
	"github.com/paddock-dev/paddock/internal/session"
	"github.com/paddock-dev/paddock/internal/wire"
)

// Status prints a node's and its cluster's health, one aspect a line,
// with what to type where something waits on a person.
func Status(w io.Writer, st wire.Status) {
	fmt.Fprintf(w, "node       %s (paddock %s), %s holding the database\n", st.Node, st.Version, count(st.Nodes, "node"))
	var live []string
	for _, s := range []session.Status{session.StatusRunning, session.StatusQueued, session.StatusAwaiting, session.StatusFailed, session.StatusStopped} {
		if n := st.Sessions[s]; n > 0 {
			live = append(live, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(live) == 0 {
		live = []string{"none"}
	}
	fmt.Fprintf(w, "sessions   %s (not archived)\n", strings.Join(live, ", "))
	if len(st.Parked) > 0 {
		var parked []string
		for _, reason := range slices.Sorted(maps.Keys(st.Parked)) {
			parked = append(parked, fmt.Sprintf("%d %s", st.Parked[reason], reason))
		}
		fmt.Fprintf(w, "parked     %s (paddock sessions ls --parked)\n", strings.Join(parked, ", "))
	}
	approvals := count(st.ApprovalsWaiting, "approval") + " waiting"
	if st.ApprovalsWaiting > 0 {
		approvals += fmt.Sprintf(", the oldest for %s (paddock approvals ls)", (time.Duration(st.OldestApprovalSeconds) * time.Second).String())
	}
	fmt.Fprintf(w, "approvals  %s\n", approvals)
	lag := "no task yet"
	if st.QueueLagMs >= 0 {
		lag = fmt.Sprintf("p99 %s since the node started", time.Duration(st.QueueLagMs)*time.Millisecond)
	}
	fmt.Fprintf(w, "queue lag  %s\n", lag)
	if d := st.Disk; d.TotalBytes > 0 {
		fmt.Fprintf(w, "disk       %s: %s used, %s free of %s (%d%% used)\n", d.Path, clip.Bytes(d.UsedBytes), clip.Bytes(d.FreeBytes), clip.Bytes(d.TotalBytes),
			100*d.UsedBytes/max(d.UsedBytes+d.FreeBytes, 1))
	}
}

// Collected prints what a collection of working copies removed.
func Collected(w io.Writer, out []wire.Collected) {
	var total int64
	for _, c := range out {
		total += c.Bytes
		if c.Mirror != "" {
			fmt.Fprintf(w, "removed the mirror of %s (%s): %s\n", c.Mirror, c.Reason, clip.Bytes(c.Bytes))
			continue
		}
		fmt.Fprintf(w, "removed %s's working copy (%s): %s\n", c.SessionID, c.Reason, clip.Bytes(c.Bytes))
	}
	fmt.Fprintf(w, "%d working copies removed, %s freed\n", len(out), clip.Bytes(total))
}

// Connections prints a project's connections as a table (never a
// credential: the server sends none), or how to add the first.
func Connections(w io.Writer, project string, cs []forge.Connection) error {
	if len(cs) == 0 {
		_, err := fmt.Fprintf(w, "project %s has no connections; an admin adds one with: paddock connections add NAME --kind KIND --url URL --repo 'OWNER/*'\n", project)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tURL\tREPOSITORIES\tADDED BY\tSTATE")
	for _, c := range cs {
		state := "live"
		if !c.Live() {
			state = "revoked by " + c.RevokedBy + " " + c.RevokedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Kind, c.URL, strings.Join(c.Repositories, ","), c.CreatedBy, state)
	}
	return tw.Flush()
}
