"""The gate pipeline as plain functions over a `Runtime`: intake, steps, routing, review, sweeper.

Testable without a broker: the Celery layer (`worker.tasks`) only schedules these functions.
"""
