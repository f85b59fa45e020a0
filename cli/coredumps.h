/*
 * --coredump: find the core systemd-coredump kept of a crash
 * (coredumps.c).
 */
#ifndef PYD_CLI_COREDUMPS_H
#define PYD_CLI_COREDUMPS_H

#include <limits.h>

#include "cli.h"
#include "../core/report/report.h"

struct cli_coredump {
	char path[PATH_MAX]; /* the core, compressed as it is stored */
	char tmp[PATH_MAX];  /* a copy written out of the journal, or "" */
	int pid;             /* the crashed process's */
	char exe[PATH_MAX], time[64];
	struct pyd_crash crash; /* what the records say, for the report */
};

/* The newest core kept of what (a pid, an executable's path, a process
 * name): 0 with *cd filled, or the exit status, the reason said on
 * stderr. */
int cli_find_coredump(const char *what, struct cli_coredump *cd);
/* Remove the copy written out of the journal, if any. */
void cli_coredump_done(struct cli_coredump *cd);

#endif
