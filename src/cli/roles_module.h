/*
 * What tide-roles.so exports to main.c: a table of the roles it holds,
 * looked up by name with dlsym (TIDE_ROLES_SYMBOL), ending with a NULL name.
 */
#ifndef TIDE_CLI_ROLES_MODULE_H
#define TIDE_CLI_ROLES_MODULE_H

#define TIDE_ROLES_MODULE_FILE "tide-roles.so"
#define TIDE_ROLES_SYMBOL "tide_roles_module"

struct tide_role {
    const char *name;
    int (*run)(int argc, char **argv);
};

extern const struct tide_role tide_roles_module[];

#endif
