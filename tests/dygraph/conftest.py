"""Each test gets fresh names and its own global scope, and leaves static mode as it found it."""
import pytest

import minifluid as fluid
from minifluid.framework import dygraph_mode


@pytest.fixture(autouse=True)
def fresh_names_scope_and_mode():
    with fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        yield
    fluid.disable_dygraph()
    assert not dygraph_mode.in_dygraph_mode(), "a test left dygraph mode on"
