"""``python -m worker`` is ``canary``."""

from worker.cli import main

main()
