package engine

// The use cases, grouped by what they act on. Each group is a view of the
// one Service (its dependencies and its checks), so a transport reads as
// svc.Sessions().Send(…), svc.Review().Accept(…), svc.Gates().Decide(…).

// Sessions are the use cases of a session's life: create, send, hold,
// archive, retry, revoke, recover, and every read of what it did.
type Sessions struct{ *Service }

// Review is the deliverable: the diff, its acceptance or rejection, the
// steps a working copy went through, and the collection of old copies.
type Review struct{ *Service }

// Gates are where a session waits on a person: approvals, parks
// (extensions, start approvals, credentials, identities) and the budget
// they guard.
type Gates struct{ *Service }

// Projects are what a project holds: its agents, its policy and its
// replay, its service credentials' checks.
type Projects struct{ *Service }

// Platform is what the platform does on an agent's word, checking no
// caller (package agency checks the requester the agent acts for):
// start a session, send a command, wake a workflow, tell a delegating
// session that its delegation returned.
type Platform struct{ *Service }

// Platform is the platform's own doors.
func (s *Service) Platform() Platform { return Platform{s} }

// Sessions is the session use cases.
func (s *Service) Sessions() Sessions { return Sessions{s} }

// Review is the deliverable's use cases.
func (s *Service) Review() Review { return Review{s} }

// Gates is the use cases of approvals and parks.
func (s *Service) Gates() Gates { return Gates{s} }

// Projects is the use cases of agents and policies.
func (s *Service) Projects() Projects { return Projects{s} }
