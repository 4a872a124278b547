"""Object stores keyed by sha256: S3 (boto3, configurable endpoint) or a local folder."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from worker.core.errors import StorageError


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def artifact_key(sha256: str) -> str:
    """Where an artifact's bytes live: content-addressed."""
    return f"sha256/{sha256[:2]}/{sha256}"


class ObjectStore(Protocol):
    location: str

    def put(self, key: str, data: bytes, *, encrypt: bool = False, content_type: str = "") -> None: ...

    def get(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...


class LocalStore:
    """A folder as object store (the embedded default). Writes are atomic renames."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.location = str(self.root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise StorageError(f"key escapes the store: {key!r}")
        return path

    def put(self, key: str, data: bytes, *, encrypt: bool = False, content_type: str = "") -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise StorageError(f"cannot write {key}: {exc}") from exc

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {key}: {exc.strerror}") from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()


class S3Store:
    """An S3 bucket through boto3; ``endpoint_url`` points at MinIO, moto or AWS."""

    def __init__(self, bucket: str, endpoint_url: str | None = None, client: Any = None) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.location = f"s3://{bucket}"
        self.client = client or boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            config=Config(retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=20),
        )

    def ensure_bucket(self) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except BotoCoreError as exc:  # the endpoint cannot be reached
            raise StorageError(f"cannot reach s3://{self.bucket}: {type(exc).__name__}") from exc
        except ClientError:
            try:
                self.client.create_bucket(Bucket=self.bucket)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                    raise StorageError(f"cannot create bucket {self.bucket}: {code}") from exc

    def put(self, key: str, data: bytes, *, encrypt: bool = False, content_type: str = "") -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        extra: dict[str, str] = {"ContentType": content_type or "application/octet-stream"}
        if encrypt:
            extra["ServerSideEncryption"] = "AES256"
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **extra)
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot put s3://{self.bucket}/{key}: {type(exc).__name__}") from exc

    def get(self, key: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body: bytes = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            return body
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot get s3://{self.bucket}/{key}: {type(exc).__name__}") from exc

    def exists(self, key: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError:
            return False
        except BotoCoreError as exc:  # the endpoint cannot be reached: not "absent"
            raise StorageError(f"cannot head s3://{self.bucket}/{key}: {type(exc).__name__}") from exc


def warm_s3_client() -> None:
    """Have boto3 load its endpoint and service data once, in the parent: every forked child's
    first S3 client is then quick, instead of a second or more of JSON parsing on a loaded
    machine inside that child's first task (whose soft time limit may be a second)."""
    import boto3

    boto3.client("s3", region_name="us-east-1")  # no request is made; the data stays cached


class CachedReader:
    """A small per-process LRU over an object store for the detect fan-out, and the bytes an
    intake in this process is still holding (:meth:`lending`), read back without a copy."""

    def __init__(self, store: ObjectStore, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._size = 0
        self._lent: dict[str, bytes] = {}

    @contextmanager
    def lending(self, key: str, data: bytes) -> Iterator[None]:
        """Within the block, ``get(key)`` returns ``data`` itself: the embedded gate steps in this
        process read the artifact its intake holds (and just stored) instead of a second and third
        copy from the store, which for a 100 MB input was 200 MB. The caller hashes every read as
        before (``load_artifact``), so a lent object that is not the key's bytes is refused."""
        self._lent[key] = data
        try:
            yield
        finally:
            self._lent.pop(key, None)

    def get(self, key: str) -> bytes:
        lent = self._lent.get(key)
        if lent is not None:
            return lent
        data = self._items.get(key)
        if data is not None:
            self._items.move_to_end(key)
            return data
        data = self.store.get(key)
        if len(data) <= self.max_bytes // 4:
            self._items[key] = data
            self._size += len(data)
            while self._size > self.max_bytes:
                _, old = self._items.popitem(last=False)
                self._size -= len(old)
        return data
