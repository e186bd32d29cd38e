package auditlog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/paddock-dev/paddock/internal/audit"
	"github.com/paddock-dev/paddock/internal/identity"
)

// ContentRetention is how long project's audit content is kept, for one
// who may read the project.
func (s *Service) ContentRetention(ctx context.Context, p identity.Principal, project string) (time.Duration, error) {
	if err := s.Access.Allow(ctx, p, project, identity.Read, fmt.Sprintf("project %q", project)); err != nil {
		return 0, err
	}
	return s.Store.ContentRetention(ctx, project)
}

// AuditAfter pages through every audit entry p may audit, in the order
// written, from leaf after (-1: the first); next is the cursor of the
// next page, and full says the page read limit entries (more may
// follow). Entries of projects p may not audit are left out of the page,
// never the cursor.
func (s *Service) AuditAfter(ctx context.Context, p identity.Principal, after int64, limit int) (entries []audit.Entry, next int64, full bool, err error) {
	within, scoped, err := s.Access.Readable(ctx, p, identity.Audit)
	if err != nil {
		return nil, after, false, err
	}
	all, next, err := s.Store.AuditAfter(ctx, after, limit)
	if err != nil {
		return nil, after, false, err
	}
	for _, e := range all {
		if !scoped || slices.Contains(within, e.Project) {
			entries = append(entries, e)
		}
	}
	return entries, next, len(all) == limit, nil
}
