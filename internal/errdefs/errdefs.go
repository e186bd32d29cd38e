// Package errdefs declares the kinds of failure every layer of Paddock
// shares. The store, the core and the transports wrap them with %w and
// say what went wrong in their own words; each transport maps the kinds to
// its own terms in one place (HTTP statuses: api.StatusOf).
package errdefs

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of failure.
var (
	// ErrNotFound is something that does not exist, or that the caller
	// may not know exists (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict is a request the current state refuses (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid is bad input from a caller (400).
	ErrInvalid = errors.New("invalid")
	// ErrDenied is a caller without the right to do what they ask (403).
	ErrDenied = errors.New("denied")
	// ErrUnauthenticated is a caller without a valid credential (401).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrUnavailable is a service Paddock depends on that did not answer
	// (a forge that is down): worth trying again later (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrTooLarge is content beyond a documented limit (413).
	ErrTooLarge = errors.New("too large")
	// ErrMediaType is content of a type the route does not take (415).
	ErrMediaType = errors.New("unsupported media type")
)

// SlotConflictError says a concurrency-1 agent's singleton slot is held.
type SlotConflictError struct {
	Agent     string
	SessionID string
}

func (e *SlotConflictError) Error() string {
	return "agent " + e.Agent + " has concurrency 1 and live session " + e.SessionID + " holds its slot; send it a message instead, or stop it first"
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *SlotConflictError) Is(target error) bool { return target == ErrConflict }

// TerminalError says a command was sent to a session that has ended
// (Status is its status: failed or stopped).
type TerminalError struct {
	SessionID string
	Status    string
}

func (e *TerminalError) Error() string {
	return "session " + e.SessionID + " is " + e.Status + " and accepts no more commands; retry it with `paddock sessions retry " + e.SessionID + "` to start a fresh one"
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *TerminalError) Is(target error) bool { return target == ErrConflict }

// KeyConflictError says an idempotency key was reused for a different
// request: the original is named, nothing new is recorded (409).
type KeyConflictError struct {
	Key, Original, What string
	// SessionID is the session the original request made or addressed.
	SessionID string
}

func (e *KeyConflictError) Error() string {
	return fmt.Sprintf("idempotency key %q was already used for %s, with a different %s; send the same request to get its answer again, or use a new key", e.Key, e.Original, e.What)
}

// Unwrap makes it a conflict.
func (e *KeyConflictError) Unwrap() error { return ErrConflict }

// ThrottledError refuses an attempt from a source that failed to
// authenticate too often: it may try again after Wait (429).
type ThrottledError struct{ Wait time.Duration }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed authentications from this address: try again in %s", e.Wait.Round(time.Second)+time.Second)
}
