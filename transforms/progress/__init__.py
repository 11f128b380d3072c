"""Progress of a run across worker processes: what each process counts
(tally), the per-process objects it writes under the run folder (objects),
and the line or bar a person reads (text)."""
