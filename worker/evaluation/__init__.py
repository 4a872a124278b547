"""`canary eval`: FN/FP tables of labelled records through the full gate."""
