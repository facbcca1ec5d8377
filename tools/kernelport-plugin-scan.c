/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport-plugin-scan PLUGIN: loads one plugin and runs its init in a process of its own for
 * the loader's out-of-process probe (core/plugin-probe.c), reporting each step on descriptor 3. */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "runtime.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: kernelport-plugin-scan PLUGIN (Kernelport's loader runs it)\n");
        return 2;
    }
    /* A crash is an answer some probes expect, not a bug to keep a core dump of. */
    prctl(PR_SET_DUMPABLE, 0);
    /* The loader reads a crash from the signal that ended this process: handlers that its own
     * libraries installed (a sanitizer's) must not turn it into an exit status. */
    static const int crashes[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof crashes / sizeof *crashes; i++)
        signal(crashes[i], SIG_DFL);
    kp__plugin_scan(argv[1], 3);
    /* No destructors and no leak report: only the plugin's load and init are on trial. */
    _exit(0);
}
