"""One module per probe; the registry is ``matrix.catalog.PROBES``."""
