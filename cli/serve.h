/*
 * pystack-dump serve: what its options (serve.c) give the server
 * (serve_http.c, in pystack-dump-serve; pystack-dump runs that program,
 * serve_exec.c).
 */
#ifndef PYD_CLI_SERVE_H
#define PYD_CLI_SERVE_H

#include <stddef.h>

#include "../frontend/options.h"

struct serve_config {
	struct pyd_opts opt; /* rate, no_gc, quiet, all */
	const char *listen;  /* ADDR:PORT */
	int *pids;           /* the processes served, unless opt.all */
	size_t npids;
};

/* Serve until SIGINT or SIGTERM; the exit status.  argv: the command
 * line, from "serve" on (serve_exec.c runs pystack-dump-serve with it). */
int serve_run(const struct serve_config *c, char **argv);

#endif
