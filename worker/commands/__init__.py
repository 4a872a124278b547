"""Operator and reviewer commands added to the ``canary`` CLI (registered in ``worker.cli``)."""
