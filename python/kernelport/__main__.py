# SPDX-License-Identifier: Apache-2.0
"""`python -m kernelport ARGS` (and the `kernelport` command a wheel installs): the kernelport
command-line tool that comes with this package."""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    # Inside a wheel the package directory is the install prefix; in a build tree the package is
    # <build>/python/kernelport and the tool <build>/bin/kernelport.
    for exe in (os.path.join(here, "bin", "kernelport"), os.path.join(here, "..", "..", "bin", "kernelport")):
        if os.access(exe, os.X_OK):
            os.execv(exe, [exe] + sys.argv[1:])
    sys.exit("kernelport: the command-line tool is not beside this package")


if __name__ == "__main__":
    main()
