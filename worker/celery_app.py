"""Entry point for ``celery -A worker.celery_app``: the app built from the environment."""

from worker.app import create_app
from worker.logs import configure_logging
from worker.settings import Settings

configure_logging(stdlib=True)
app = create_app(Settings())
