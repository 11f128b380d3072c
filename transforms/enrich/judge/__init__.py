"""LLM-judge metrics: prompt templates, strict replies, the JudgeTurns stage and the formulas."""
