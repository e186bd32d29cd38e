-- Reasoning: the effort each model step was called with, and the output
-- tokens it spent reasoning where its provider reports them apart.
ALTER TABLE usage ADD COLUMN thinking_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE usage ADD COLUMN reasoning_effort TEXT NOT NULL DEFAULT '';
