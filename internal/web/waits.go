package web

import "github.com/paddock-dev/paddock/internal/bound"

// waitWords says, in words a person on the web reads, what a session
// parked for a reason waits for (the CLI's own words name commands).
var waitWords = map[bound.Reason]string{
	bound.AwaitingApproval:             "waits for a decision on a call",
	bound.AwaitingAnswer:               "waits for an answer to its question",
	bound.AwaitingExtension:            "used its budget of actions or active time: extend it to let it go on",
	bound.AwaitingCredentials:          "waits for its requester's credentials",
	bound.AwaitingIdentity:             "waits for its requester to choose whose identity it acts with",
	bound.AwaitingStartApproval:        "a guest's session waits for a member to let it start",
	bound.BillingInsufficientCredits:   "the model provider's account is out of credits: add credits there, then wake it",
	bound.BillingSpendingLimitExceeded: "the model provider's spending limit is reached: raise it there, then wake it",
	bound.BillingSpendCapExceeded:      "reached its spend cap: raise the cap to let it go on",
	bound.ProviderOutage:               "the model provider is unreachable: it wakes by itself when it is back, or wake it now",
}

// waits is what a session parked for reason waits for, in words.
func waits(reason string) string {
	if w, ok := waitWords[bound.Reason(reason)]; ok {
		return w
	}
	return "waits (" + reason + ")"
}
