"""Renders VALIDITY.md from bench/validity.py's result files (placeholder)."""
def render(reports, path):
    pass
