/*
 * serve_run in pystack-dump itself: the HTTP server is a program of its
 * own, pystack-dump-serve, installed next to it (and built next to it),
 * because libmicrohttpd brings gnutls and its dependencies, whose
 * loading and constructors would multiply the start-up of every one-shot
 * dump (1.0 to 6.0 million instructions for --version) if pystack-dump
 * linked them.  A build without it (the static binary: Debian ships no
 * static archive of what libmicrohttpd links) says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

#define SERVE_EXE "pystack-dump-serve"

int serve_run(const struct serve_config *c, char **argv)
{
	(void)c;
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
	if (slash && (size_t)(slash - path) + sizeof "/" SERVE_EXE <= sizeof path) {
		strcpy(slash + 1, SERVE_EXE);
		execv(path, argv);
	}
	cli_say_about("pystack-dump serve", PYD_SAY_NO_SERVE,
	              PYD_E_UNSUPPORTED, NULL,
	              errno == ENOENT ? SERVE_EXE " is not next to pystack-dump "
	                                "(the static binary has none: it cannot "
	                                "link libmicrohttpd)"
	                              : strerror(errno));
	return PYD_E_UNSUPPORTED;
}
