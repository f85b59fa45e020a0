/*
 * What went wrong, for every pystack-dump command: bad usage here, and
 * each error of reading a target from the front end's one table of
 * messages (frontend/explain.c).
 */
#include <stdio.h>
#include <stdlib.h>

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
	*pid = (int)v;
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
