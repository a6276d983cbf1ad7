/* `tide top`: a live view of the cluster (placeholder until written). */
#include <stdio.h>

#include "cli/roles.h"

int cli_top_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("tide top: not written yet\n", stderr);
    return 1;
}
