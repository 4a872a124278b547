"""One exception tree: every product exception is under CanaryError, is named ...Error and
survives the pickle round trip Celery puts task errors through."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import sys

import pytest

import policies
import producers
import worker
from worker.core.errors import CanaryError, ConfigError, DetectorError, UsageError
from worker.core.models import ErrorKind


def import_product() -> None:
    """Import every module of worker, producers and policies, so every class is defined."""
    for package in (worker, producers, policies):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not module.name.endswith(".__main__"):
                importlib.import_module(module.name)


import_product()  # before the parametrization below walks the tree


def product_exceptions() -> list[type[BaseException]]:
    found = {
        value
        for name, module in list(sys.modules.items())
        if name.split(".")[0] in ("worker", "producers", "policies")
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == name
    }
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def tree(root: type[BaseException]) -> list[type[BaseException]]:
    """``root`` and every class below it."""
    return [root, *(cls for sub in root.__subclasses__() for cls in tree(sub))]


def test_every_product_exception_is_under_the_root_and_named_error():
    """Each exception class defined in worker, producers or policies subclasses CanaryError and
    its name ends in Error."""
    found = product_exceptions()
    assert len(found) >= 12
    assert [cls for cls in found if not issubclass(cls, CanaryError)] == []
    assert [cls.__name__ for cls in found if not cls.__name__.endswith("Error")] == []


def test_mistakes_are_kept_apart_from_runtime_failures():
    """Policy and settings mistakes are ConfigErrors, bad requests UsageErrors, detector failures
    neither."""
    from policies import PolicyError
    from producers.files import InputError
    from worker.pipeline.review import ReviewError

    assert issubclass(PolicyError, ConfigError)
    assert issubclass(InputError, UsageError) and issubclass(ReviewError, UsageError)
    assert not issubclass(DetectorError, ConfigError | UsageError)


@pytest.mark.parametrize("cls", tree(CanaryError), ids=lambda cls: cls.__name__)
def test_every_exception_survives_a_pickle_round_trip(cls):
    """Each class under the root, pickled and unpickled, keeps its type, message and attributes."""
    error = cls("the message")
    error.extra = 7  # an attribute set after construction, as Celery's callers may
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert str(copy) == "the message"
    assert vars(copy) == vars(error)


def test_a_backend_error_keeps_its_status_and_kind_through_pickle():
    """A model API error crosses a process boundary with its status code, attempts and vote kind."""
    from worker.detectors.llm.http import BackendError

    error = BackendError("HTTP 503", kind=ErrorKind.timeout, status_code=503, attempts=3)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.message, copy.kind, copy.status_code, copy.attempts) == (
        "HTTP 503",
        ErrorKind.timeout,
        503,
        3,
    )
