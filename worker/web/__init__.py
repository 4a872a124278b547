"""HTTP apps: the intake server and the review app."""
