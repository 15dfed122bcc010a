"""runbook."""
