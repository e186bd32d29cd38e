package client

// The API's calls, grouped as the server's use cases are: c.Sessions().Send(…),
// c.Review().Accept(…), c.Gates().Decide(…), c.Projects().Apply(…),
// c.Audit().Verify(…), c.Access().CreateToken(…).

// Sessions are the calls on sessions: create, list, send, follow, hold,
// archive, retry, revoke.
type Sessions struct{ *Client }

// Review is the deliverable: the diff, accept, reject, the steps of a
// working copy, collection.
type Review struct{ *Client }

// Gates are approvals and parks: decide, extend, unpark, start approvals,
// credentials, identities.
type Gates struct{ *Client }

// Projects are a project's agents and policy.
type Projects struct{ *Client }

// Audit is the audit log: read, export, prove, verify, retention, the
// access log.
type Audit struct{ *Client }

// Access is who may do what: users, tokens, projects and their members,
// OIDC login.
type Access struct{ *Client }

// Sessions is the calls on sessions.
func (c *Client) Sessions() Sessions { return Sessions{c} }

// Review is the calls on the deliverable.
func (c *Client) Review() Review { return Review{c} }

// Gates is the calls on approvals and parks.
func (c *Client) Gates() Gates { return Gates{c} }

// Projects is the calls on agents and policies.
func (c *Client) Projects() Projects { return Projects{c} }

// Audit is the calls on the audit log.
func (c *Client) Audit() Audit { return Audit{c} }

// Access is the calls on users, tokens and projects.
func (c *Client) Access() Access { return Access{c} }
