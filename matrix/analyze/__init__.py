"""Reading results: the API census diff, the fingerprint diff, a team's usage profile, and
the check that a matrix run lost nothing (verify)."""
