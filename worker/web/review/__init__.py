"""The review app (``canary review serve``): reviewers drain quarantine and review in a browser."""
