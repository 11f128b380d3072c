"""Assembly of evalbeam: config loading, the CLI and the pipeline graph."""
