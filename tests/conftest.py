import pytest


@pytest.fixture
def scratch_registry(monkeypatch):
    """The op registry, restored after the test: ops a test registers do not outlive it."""
    from minifluid.ops import registry
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    return registry
