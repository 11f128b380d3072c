"""Stage `score`: ScoreWith, the scorer registry, corpus statistics; metrics/ = pure maths."""
