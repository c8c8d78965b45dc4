"""Helpers the probes share: the probe contract (base), and common observation code."""
