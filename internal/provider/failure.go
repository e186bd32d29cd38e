package provider

import (
	"errors"
	"net"
	"strings"
)

// StatusError is a provider's error answer, after the SDK's own retries:
// its HTTP status and the message it gave.
type StatusError struct {
	Status  int
	Message string
	Err     error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// Failure is what a failed model call says about the provider.
type Failure string

// Failures a session parks on instead of failing.
const (
	// Outage: the provider is unreachable or overloaded (5xx, 529, no
	// connection).
	Outage Failure = "outage"
	// NoCredits: the account has no credits left (402, insufficient quota).
	NoCredits Failure = "credits"
	// SpendingLimit: the organization's spending limit is reached.
	SpendingLimit Failure = "spending_limit"
)

// Classify says what a failed call's error means for the session: an
// outage or a billing failure it can wait out, or "" for any other.
func Classify(err error) Failure {
	var se *StatusError
	if errors.As(err, &se) {
		msg := strings.ToLower(se.Message)
		switch {
		case strings.Contains(msg, "spending limit") || strings.Contains(msg, "usage limit"):
			return SpendingLimit
		case se.Status == 402 || strings.Contains(msg, "insufficient_quota") || strings.Contains(msg, "credit balance") ||
			strings.Contains(msg, "exceeded your current quota"):
			return NoCredits
		case se.Status >= 500:
			return Outage
		}
		return ""
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return Outage
	}
	return ""
}
