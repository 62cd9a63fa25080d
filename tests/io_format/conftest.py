import json
import os

import numpy as np
import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "paddle262")


@pytest.fixture(scope="session")
def paddle_files():
    """The directory of files real Paddle 2.6.2 wrote (tools/make_paddle_fixtures.py)."""
    return FIXTURES


@pytest.fixture(scope="session")
def expected():
    with np.load(os.path.join(FIXTURES, "expected.npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="session")
def fixture_lods():
    with open(os.path.join(FIXTURES, "lod.json")) as f:
        return json.load(f)
