"""Canary Gate: a harm gate that classifies untrusted artifacts before an AI agent reads them.

Importing ``worker`` is cheap; heavy modules (Celery, boto3, models) load on use.
"""

__version__ = "0.1.0"
