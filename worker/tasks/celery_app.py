"""Entry point for ``celery -A worker.tasks.celery_app``: the app built from the environment."""

from worker.logs import configure_logging
from worker.settings import Settings
from worker.tasks.app import create_app

configure_logging(stdlib=True)
app = create_app(Settings())
