package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/spec"
)

// EnsureProject implements store.Store.
func (s Agents) EnsureProject(ctx context.Context, name string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, s.ts())
	if err != nil {
		return fmt.Errorf("ensure project %q: %w", name, err)
	}
	return nil
}

// ApplyAgents implements store.Store.
func (s Agents) ApplyAgents(ctx context.Context, agents []spec.Record) ([]spec.ApplyResult, error) {
	results := make([]spec.ApplyResult, len(agents))
	err := s.tx(ctx, func(tx *txn) error {
		now := s.ts()
		for i, a := range agents {
			if _, err := tx.ExecContext(ctx, `INSERT INTO projects (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, a.Project, now); err != nil {
				return err
			}
			var digest string
			err := tx.QueryRowContext(ctx, `SELECT digest FROM agents WHERE project = ? AND name = ?`, a.Project, a.Name).Scan(&digest)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				_, err = tx.ExecContext(ctx, `INSERT INTO agents (project, name, spec, digest, concurrency, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
					a.Project, a.Name, string(a.Spec), a.Digest, a.Concurrency, now, now)
				results[i] = spec.Created
			case err != nil:
			case digest == a.Digest:
				results[i] = spec.Unchanged
			default:
				_, err = tx.ExecContext(ctx, `UPDATE agents SET spec = ?, digest = ?, concurrency = ?, updated_at = ? WHERE project = ? AND name = ?`,
					string(a.Spec), a.Digest, a.Concurrency, now, a.Project, a.Name)
				results[i] = spec.Configured
			}
			if err != nil {
				return fmt.Errorf("agent %s: %w", a.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply agents: %w", err)
	}
	return results, nil
}

const agentCols = `project, name, spec, digest, concurrency, created_at, updated_at`

func scanAgent(row scanner) (spec.Record, error) {
	var a spec.Record
	var spec, created, updated string
	if err := row.Scan(&a.Project, &a.Name, &spec, &a.Digest, &a.Concurrency, &created, &updated); err != nil {
		return a, err
	}
	a.Spec, a.CreatedAt, a.UpdatedAt = []byte(spec), parseTime(created), parseTime(updated)
	return a, nil
}

// GetAgent implements store.Store.
func (s Agents) GetAgent(ctx context.Context, project, name string) (spec.Record, error) {
	a, err := scanAgent(s.db.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE project = ? AND name = ?`, project, name))
	if err != nil {
		return a, notFound("agent", name, err)
	}
	return a, nil
}

// ListAgents implements store.Store.
func (s Agents) ListAgents(ctx context.Context, project string) ([]spec.Record, error) {
	out, err := queryAll(ctx, s.db, scanAgent, `SELECT `+agentCols+` FROM agents WHERE (? = '' OR project = ?) ORDER BY project, name`, project, project)
	return out, wrap(err, "list agents")
}
