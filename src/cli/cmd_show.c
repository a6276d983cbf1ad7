/* Placeholder until this role is written. */
#include <stdio.h>

#include "cli/roles.h"

int cli_show_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tide: not implemented yet\n");
    return 1;
}
