"""Helpers of the Triton course: timing-data format, notebook builder, GPU runner."""
