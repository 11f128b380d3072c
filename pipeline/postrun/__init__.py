"""Post-run commands: they read the published tables of finished runs (compare)."""
