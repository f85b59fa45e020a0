/*
 * pystack-dump diff BASE NEW: two saved profiles compared (core's
 * pyd_profile_read and pyd_report_diff); this reads the files and writes
 * the result.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/report/profiles.h"
#include "../frontend/options.h"
#include "cli.h"

static const char usage_text[] =
    "Usage: pystack-dump diff [OPTIONS] BASE NEW\n"
    "\n"
    "Compare two profiles of a program: NEW (after a change, say) against\n"
    "BASE. Each is a file pystack-dump sample wrote as collapsed stacks\n"
    "(-f collapsed, also flamegraph.pl's input from other tools), as its\n"
    "JSON tree (-f json) or as a recording (-f raw, the whole of it),\n"
    "told apart by their content; - is standard input. What is compared\n"
    "is each frame's share of its profile's samples, so runs of different\n"
    "lengths compare; threads are merged and processes taken as one.\n"
    "\n"
    "Options:\n"
    "  -f, --format FMT    table       the functions whose own share grew\n"
    "                                  and shrank most: before, after,\n"
    "                                  the change in points, and the same\n"
    "                                  for cumulative shares (default)\n"
    "                      collapsed   every stack of either, then BASE's\n"
    "                                  and NEW's samples and the change of\n"
    "                                  its share in points (+1.25)\n"
    "                      flamegraph  NEW's flame graph, each frame\n"
    "                                  coloured by the change of its share:\n"
    "                                  red grew, blue shrank (default for\n"
    "                                  -o *.html)\n"
    "  -o, --output FILE   write there (default, or -: stdout)\n"
    "      --limit N       table rows of each kind (default 40; 0: all)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 on success, 2 on bad usage, 16 if BASE or NEW cannot\n"
    "be read as a profile or recording (the message says which and why),\n"
    "17 if -o cannot be written, 10 out of memory.\n"
    "\n"
    "Examples:\n"
    "  pystack-dump sample -d 10 -o before.json PID\n"
    "  pystack-dump sample -d 10 -o after.json PID\n"
    "  pystack-dump diff before.json after.json\n"
    "  pystack-dump diff -o change.html before.json after.json\n";

static int bad_usage(const char *why)
{
	fprintf(stderr,
	        "pystack-dump diff: %s\nTry 'pystack-dump diff --help'.\n",
	        why);
	return PYD_E_USAGE;
}

/* The whole of a file (stdin for "-") into b. */
static bool slurp(const char *path, struct pyd_buf *b)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f)
		return false;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		pyd_buf_put(b, chunk, n);
	bool ok = !ferror(f) && !b->failed;
	if (f != stdin)
		fclose(f);
	return ok;
}

static enum pyd_err load(const char *path, struct pyd_profile **p)
{
	struct pyd_buf b = {0};
	char detail[512];
	enum pyd_err err = PYD_E_PROFILE;
	errno = 0;
	if (slurp(path, &b))
		err = pyd_profile_read(b.data ? b.data : "", b.len, p, detail,
		                       sizeof detail);
	else
		snprintf(detail, sizeof detail, "%s",
		         b.failed ? "out of memory" : strerror(errno));
	if (err)
		cli_say_about("pystack-dump diff", PYD_SAY_ERROR, err,
		              strcmp(path, "-") ? path : "stdin", detail);
	pyd_buf_free(&b);
	return err;
}

static enum pyd_err write_out(const struct pyd_opts *o, struct pyd_buf *b)
{
	return (enum pyd_err)cli_write_file("pystack-dump diff", o->output,
	                                    "the comparison", b->data,
	                                    b->len);
}

/* -f, else a page for an -o name ending .html, else the table. */
static const char *format_for(const struct pyd_opts *o)
{
	const char *out = o->output;
	size_t n = out ? strlen(out) : 0;
	if (o->diff_format)
		return o->diff_format;
	if ((n > 5 && !strcmp(out + n - 5, ".html")) ||
	    (n > 4 && !strcmp(out + n - 4, ".htm")))
		return "flamegraph";
	return "table";
}

int diff_main(int argc, char **argv)
{
	struct pyd_opts o;
	char err[512];
	if (!pyd_opts_getopt(argc, argv, PYD_IN_DIFF, &o, err, sizeof err))
		return bad_usage(err);
	if (o.help) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc - optind != 2)
		return bad_usage("give two profiles: BASE NEW");
	struct pyd_profile *base = NULL, *now = NULL;
	enum pyd_err rc = load(argv[optind], &base);
	if (!rc)
		rc = load(argv[optind + 1], &now);
	struct pyd_buf b = {0};
	if (!rc && (rc = pyd_report_diff(&b, base, now, format_for(&o),
	                                 o.limit)))
		fprintf(stderr, "pystack-dump diff: out of memory\n");
	if (!rc)
		rc = write_out(&o, &b);
	pyd_buf_free(&b);
	pyd_profile_free(base);
	pyd_profile_free(now);
	return rc;
}
