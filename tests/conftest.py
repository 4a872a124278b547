"""Settings shared by every test package."""

from __future__ import annotations

from hypothesis import settings

# Property tests check correctness, not speed (speed targets are benchmark scripts): no
# per-example deadline, so a loaded CI machine cannot fail them on timing alone.
settings.register_profile("canary", deadline=None)
settings.load_profile("canary")
