"""HTTP apps: the intake server (``canary serve``) and the review app."""
