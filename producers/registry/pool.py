"""Many releases at once: downloads in threads, diffs in spawned processes, in input order."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import httpx

from producers.registry.errors import RegistryError
from producers.registry.polite import Politeness, polite_client
from producers.registry.release import ReleaseArchives, ReleaseDiff


class ReleasePool:
    """Registry releases: downloaded in threads (the network, one keep-alive client), opened and
    diffed in spawned processes (pure-Python CPU work that threads would serialise on one core).

    A diff process that dies (killed, out of memory) breaks its pool: the pool is replaced and
    each release it held is diffed once more; one whose diff dies twice is reported as not gated.
    """

    def __init__(
        self,
        downloads: int,
        download: Callable[[httpx.Client, str], ReleaseArchives],
        diff: Callable[[ReleaseArchives], ReleaseDiff],
    ) -> None:
        self.download, self.diff = download, diff
        self.threads = ThreadPoolExecutor(max_workers=downloads, thread_name_prefix="canary-fetch")
        # As before the fetch queue: as many downloads at once as threads, no rate limit (that is
        # the workers' politeness, CANARY_FETCH_*); 429/5xx are retried with backoff.
        self.client = polite_client(Politeness(per_host=downloads, rate=0))
        self.lock = threading.Lock()
        self.processes: ProcessPoolExecutor | None = None
        self.closed = False

    def submit(self, spec: str) -> Future[ReleaseDiff]:
        return self.threads.submit(self._release, spec)

    def _release(self, spec: str) -> ReleaseDiff:
        archives = self.download(self.client, spec)
        for _ in range(2):
            pool = self._pool()
            try:
                return pool.submit(self.diff, archives).result()
            except BrokenProcessPool:
                self._replace(pool)
        raise RegistryError(f"{spec}: the diff process died twice; not gated")

    def _pool(self) -> ProcessPoolExecutor:
        with self.lock:
            if self.closed:  # a download that finished after the batch was cut short: no new pool
                raise RegistryError("fetching stopped")
            if self.processes is None:
                context = multiprocessing.get_context("spawn")  # no forked copy of the caller's state
                self.processes = ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=context)
            return self.processes

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self.lock:
            if self.processes is broken:  # the first to see it replaces it, once
                broken.shutdown(wait=False, cancel_futures=True)
                self.processes = None

    def close(self, wait: bool) -> None:
        self.threads.shutdown(wait=wait, cancel_futures=True)
        with self.lock:
            self.closed = True
            if self.processes is not None:
                self.processes.shutdown(wait=wait, cancel_futures=True)
        self.client.close()
