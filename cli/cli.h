/*
 * What the pystack-dump subcommands share with the main command.
 */
#ifndef PYD_CLI_H
#define PYD_CLI_H

#include "../core/pyd_error.h"

/* The pid in arg, or a usage error (returned; 0 on success). */
int cli_parse_pid(const char *arg, int *pid);
/* Explain err about live process pid on stderr; returns the exit code. */
int cli_report_error(enum pyd_err err, int pid, const char *detail);
/* pystack-dump sample ... (argv[0] is "sample") */
int sample_main(int argc, char **argv);

#endif
