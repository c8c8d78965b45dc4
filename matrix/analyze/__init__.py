"""Reading results: the API census diff, the fingerprint diff, a team's usage profile."""
