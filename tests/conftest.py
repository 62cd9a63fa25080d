"""Fixtures shared by the test folders."""
import pytest

from minifluid import compat


@pytest.fixture
def scratch_registry(monkeypatch):
    """The op registry, restored after the test: ops a test registers do not outlive it."""
    from minifluid.ops import registry
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    return registry


@pytest.fixture
def paddle():
    """The compat ``paddle`` package for one test (``python -m minifluid.compat`` does the same)."""
    compat.install()
    try:
        import paddle  # noqa: PLC0415 - resolved by the compat finder
        yield paddle
    finally:
        compat.uninstall()
        import minifluid.dygraph.base as base  # noqa: PLC0415
        base._static_requested = False
