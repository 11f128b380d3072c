"""Metric maths: plain functions, text in and MetricResult out, no Beam.

Each module holds one concern; `transforms.score.scoring` wraps them in ParDos.
"""
