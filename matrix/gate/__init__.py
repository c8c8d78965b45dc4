"""The upgrade gate: ``python -m matrix gate`` (see ``matrix.gate.verdict``)."""
