"""Stage `publish`: rows, writers, summary CombineFns, Finalize, manifest and report."""
