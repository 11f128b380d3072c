"""Data contracts of evalbeam: input cases, in-flight records, output tables."""

SCHEMA_VERSION = "4"
"""The output tables' version, written to every manifest. Tables change only by
adding columns (never renaming, retyping or removing one), and every added
column raises the version, so a reader written for version N reads N + k.

1: the first tables.
2: usage/ gains `shared_cache_hits` (cache hits served by the shared tier).
3: usage/ gains `bot`, `metric`, `split_among` (rows per endpoint × model ×
   purpose × bot × metric; a call shared by several metrics is split among them)
   and `budget_refused` (calls not sent: a spend cap was reached); comparisons/
   gains `min_difference` (`compare --min-difference`; it came in b677cc6 while
   the version still read 2 and was first covered by this raise, so comparisons/
   of version 2 may lack it). Also in since version 2 was raised, and first
   covered by this raise (so a version-2 file may lack them): results/ gains
   `label`, `references` and `messages`; summary/ gains `ci_low` and `ci_high`;
   the calibration/ and comparisons/ tables are new.
4: summary/ gains `sampled` and `population` (judge metrics computed on a sample);
   results/ gains `decided_by` (judge.escalate: "offline", "escalated" or
   "escalation_failed"); usage/
   gains `skipped_rows` and `saved_calls` (what the cascade and the sample saved).
"""
