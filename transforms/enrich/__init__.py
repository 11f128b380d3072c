"""Stage `enrich`: EmbedTurns + embedders, JudgeTurns + judge tasks and prompts."""
