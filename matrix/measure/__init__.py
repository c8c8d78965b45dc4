"""Measuring: cells, their environments, the runner and its children, raw files."""
