/* SPDX-License-Identifier: Apache-2.0 */
/* The kernelport tool's entry point; the command line itself is cli_main (cli-main.c). */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv, NULL);
}
