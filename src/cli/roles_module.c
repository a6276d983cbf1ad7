/*
 * The entry of tide-roles.so: the roles that need the server's libraries
 * (libmicrohttpd, SQLite, GnuTLS), which main.c loads only when asked for
 * one of them, so that client commands start without mapping those.
 */
#include <stddef.h>

#include "cli/roles.h"
#include "cli/roles_module.h"

const struct tide_role tide_roles_module[] = {
    {"server", server_main},
    {"up", cli_up_main},
    {NULL, NULL},
};
