# SPDX-License-Identifier: Apache-2.0
"""One runtime for the whole session, so that PoCL compiles each program once."""
import numpy as np
import pytest

import kernelport as kp


@pytest.fixture(scope="session")
def rt():
    with kp.Runtime() as runtime:
        yield runtime


@pytest.fixture
def rng():
    return np.random.default_rng(28)
