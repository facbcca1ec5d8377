# SPDX-License-Identifier: Apache-2.0
"""kernelport.comm in one process: where the extension was built without MPI (the wheel), the
import says so. Its collectives are checked on 2 ranks by mpi_comm.py (test-python-comm-np2)."""
import pytest

import kernelport as kp


def test_comm_without_mpi_says_why():
    if hasattr(kp._kernelport, "Communicator"):
        pytest.skip("this build has the collectives (python/tests/mpi_comm.py checks them)")
    with pytest.raises(ImportError, match="built without MPI"):
        import kernelport.comm  # noqa: F401
