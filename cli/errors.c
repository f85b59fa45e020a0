/*
 * What went wrong, for every pystack-dump command: bad usage here, and
 * each error of reading a target from the front end's one table of
 * messages (frontend/explain.c); and output files, checked before a run
 * and written whole, with the one exit status for those that cannot be.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/memsrc/live.h"
#include "cli.h"

int cli_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump --help' for more information.\n");
	return PYD_E_USAGE;
}

int cli_parse_pid(const char *arg, int *pid)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || end == arg || v <= 0 || v > 0x7fffffff)
		return cli_usage_error("'%s' is not a process id", arg);
	/* A thread's id (from top -H, a log line) names its process. */
	*pid = pyd_live_tgid((int)v);
	if (*pid != v)
		fprintf(stderr, "pystack-dump: %ld is a thread of process %d: "
			"reading the process (all its threads are shown).\n",
			v, *pid);
	return 0;
}

void cli_say(const struct pyd_explain *e, enum pyd_say say, enum pyd_err err)
{
	struct pyd_buf b = {0};
	pyd_explain(&b, e, say, err);
	if (b.data)
		fwrite(b.data, 1, b.len, stderr);
	pyd_buf_free(&b);
}

void cli_say_about(const char *prog, enum pyd_say say, enum pyd_err err,
		   const char *file, const char *detail)
{
	struct pyd_explain e = {.prog = prog,
				.shell = PYD_SHELL_CLI,
				.file = file,
				.detail = detail};
	cli_say(&e, say, err);
}

int cli_report_error(enum pyd_err err, const struct target_spec *spec,
		     const char *detail)
{
	struct pyd_explain e = target_words(spec, "pystack-dump", detail);
	cli_say(&e, PYD_SAY_ERROR, err);
	return err;
}

struct pyd_explain cli_about(const struct target_spec *spec)
{
	return target_words(spec, "pystack-dump", "");
}

/* ---- output files ---- */

int cli_cannot_write(const char *prog, const char *path, const char *what,
		     int err)
{
	if (err == EPIPE)
		return 0;
	cli_say_about(prog, PYD_SAY_CANNOT_WRITE, PYD_E_WRITE,
		      path ? path : what, strerror(err));
	return PYD_E_WRITE;
}

int cli_output_check(const char *prog, const char *path)
{
	if (!path)
		return 0;
	/* Opened as the write will open it, but not truncated: a file the
	 * check made is removed again, one that was there is left as is. */
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	bool made = false;
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		made = fd >= 0;
	}
	if (fd < 0)
		return cli_cannot_write(prog, path, NULL, errno);
	close(fd);
	if (made)
		unlink(path);
	return 0;
}

int cli_write_file(const char *prog, const char *path, const char *what,
		   const void *data, size_t len)
{
	FILE *f = path ? fopen(path, "wb") : stdout;
	bool ok = f && (!len || fwrite(data, 1, len, f) == len);
	if (f && f != stdout)
		ok &= fclose(f) == 0;
	else if (f)
		ok &= fflush(f) == 0;
	return ok ? 0 : cli_cannot_write(prog, path, what, errno);
}
