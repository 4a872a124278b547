"""The Celery layer: the app, its tasks and worker hooks. The only package that imports celery."""
