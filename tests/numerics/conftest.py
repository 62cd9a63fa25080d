"""Each test builds its programs with fresh names (fc_0, fc_1 ...) and its own global scope."""
import pytest

import minifluid as fluid


@pytest.fixture(autouse=True)
def fresh_names_and_scope():
    with fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        yield
