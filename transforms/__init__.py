"""Beam PTransforms and DoFns of evalbeam, each a thin shell over plain Python."""
