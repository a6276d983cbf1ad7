/* Placeholder until this role is written. */
#include <stdio.h>

#include "cli/roles.h"

int server_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "tide: not implemented yet\n");
    return 1;
}
