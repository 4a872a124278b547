"""The per-process bundle of I/O the tasks use: repo, stores, sinks. Built lazily after fork."""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from worker.adapters import stage_metrics
from worker.adapters.db import FetchRepo, GateRepo, make_engine
from worker.adapters.progress import NoProgress, Progress, progress_for
from worker.adapters.sinks import FolderSink, KombuSink, QueueSink
from worker.adapters.storage import CachedReader, LocalStore, ObjectStore, S3Store
from worker.settings import Settings


@dataclass
class Runtime:
    settings: Settings
    repo: GateRepo
    store: ObjectStore
    reader: CachedReader
    quarantine: ObjectStore
    allowed: QueueSink
    review: QueueSink
    actor: str
    progress: Progress = field(default_factory=NoProgress)  # fan-out ledger for `canary stuck`
    fetches: FetchRepo | None = None  # release references (worker.pipeline.fetch); None: none kept

    @property
    def fetch_repo(self) -> FetchRepo:
        """The release references, on the gate database (built on first use when not given)."""
        if self.fetches is None:
            self.fetches = FetchRepo(self.repo.engine)
        return self.fetches


def build_runtime(settings: Settings, role: str = "worker") -> Runtime:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.stage_metrics:
        stage_metrics.enable(stage_metrics.metrics_folder(settings))
    repo = GateRepo(make_engine(settings.sqlalchemy_url))
    store: ObjectStore
    quarantine: ObjectStore
    if settings.use_s3:
        s3 = S3Store(settings.artifact_bucket, settings.s3_endpoint_url)
        q = S3Store(settings.quarantine_bucket, settings.s3_endpoint_url, client=s3.client)
        s3.ensure_bucket()
        q.ensure_bucket()
        store, quarantine = s3, q
    else:
        store = LocalStore(settings.data_dir / "objects")
        quarantine = LocalStore(settings.data_dir / "quarantine")
    allowed: QueueSink
    review: QueueSink
    if settings.embedded:
        allowed = FolderSink(settings.data_dir / "allowed")
        review = FolderSink(settings.data_dir / "review")
    else:
        url = settings.require_broker()
        allowed = KombuSink(url, settings.allowed_queue)
        review = KombuSink(url, settings.review_queue)
    actor = f"{role}:{socket.gethostname()}:{os.getpid()}"
    progress = progress_for(settings.broker_url, settings.gate_deadline_s)
    reader = CachedReader(store)
    fetches = FetchRepo(repo.engine)
    return Runtime(settings, repo, store, reader, quarantine, allowed, review, actor, progress, fetches)


_BUILD = threading.Lock()


def attach_runtime(app: Any, rt: Runtime) -> None:
    """Make ``rt`` the runtime of ``app`` in this process (the embedded gate builds its runtime
    before its app, and only builds the app when a gate must run)."""
    app._canary_runtime = (os.getpid(), rt)


def runtime_for(app: Any) -> Runtime:
    """The runtime of ``app`` in this process (rebuilt in each forked child).

    It lives on the app itself: a registry keyed by ``id(app)`` handed a new app the runtime (the
    database, the folders) of a collected one that had had the same address.
    """
    found: tuple[int, Runtime] | None = getattr(app, "_canary_runtime", None)
    if found is None or found[0] != os.getpid():
        with _BUILD:
            found = getattr(app, "_canary_runtime", None)
            if found is None or found[0] != os.getpid():
                found = (os.getpid(), build_runtime(app.canary_settings))
                app._canary_runtime = found
    return found[1]
