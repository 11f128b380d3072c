"""Statistics below the tables that use them: confidence intervals, the t table,
and the bounded accumulator of a metric's values (summary/ and usage/ latency)."""
