"""Entry point for ``celery -A worker.celery_app``: the app built from the environment."""

from worker.app import create_app
from worker.settings import Settings

app = create_app(Settings())
