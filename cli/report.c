/*
 * pystack-dump report: a recording (sample -f raw) turned into any
 * profile format, or a time slice of it.  The replay feeds the samples
 * into a profile as a sampler would (core/report/recording.c); the
 * profile is then written as sample writes its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/report/stream.h"
#include "../frontend/options.h"
#include "cli.h"

#define PROG "pystack-dump report"

static const char usage_head[] =
    "Usage: pystack-dump report [OPTIONS] FILE\n"
    "\n"
    "Turn FILE, a recording made by pystack-dump sample -f raw (or -o\n"
    "NAME.pydrec), into a profile: the samples are aggregated as sample\n"
    "would have aggregated them, so every format of sample can be written\n"
    "from one recording, and again later, of the whole run or of a slice.\n"
    "A recording cut short (the profiler was killed, or the file is still\n"
    "being written) gives the samples before the cut, and says so.\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "  -o, --output FILE   write there (default, or -: stdout); without -f the\n"
    "                      name's suffix picks the format, else collapsed\n"
    "                      (a table on a terminal)\n"
    "      --from SEC      only the samples taken SEC seconds or more\n"
    "                      after sampling began\n"
    "      --to SEC        ... and up to SEC seconds after it\n"
    "      --threads       one tree per thread (default: threads merged)\n"
    "      --no-lines      aggregate by function, not by line\n"
    "      --limit N       table rows (default 40; 0: all)\n"
    "      --idle          keep idle threads (never seen on a CPU) in the\n"
    "                      table; by default it leaves them out\n"
    "  -q, --quiet         no summary on stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "With -f raw the samples kept are written as a recording again (a\n"
    "slice of it, say); with -f jsonl as a JSON line each. The summary\n"
    "on stderr gives the samples, the time they span and, for the whole\n"
    "run, the rounds, errors and missed ticks the recording ended with.\n"
    "\n"
    "Exit status: 0 if a profile was written (also from a recording cut\n"
    "short); 2 bad usage; 9 the output could not be written; 10 out of\n"
    "memory; 16 FILE cannot be read, is no recording, is of a newer\n"
    "format, or is corrupt (the samples before the corruption are still\n"
    "written).\n"
    "\n"
    "Examples:\n"
    "  pystack-dump sample -d 600 -o run.pydrec 1234\n"
    "  pystack-dump report run.pydrec -o run.html\n"
    "  pystack-dump report run.pydrec --from 120 --to 180 -f table\n"
    "  pystack-dump report run.pydrec -f jsonl | jq .frames[0].function\n";

static void usage(void)
{
	fputs(usage_head, stdout);
	cli_format_help();
	fputs(usage_tail, stdout);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump report --help'.\n");
	return PYD_E_USAGE;
}

static int parse_args(int argc, char **argv, struct pyd_opts *o,
                      const char **file)
{
	char err[512];
	if (!pyd_opts_getopt(argc, argv, PYD_IN_REPORT, o, err, sizeof err))
		return bad_usage("%s", err);
	if (o->help) {
		usage();
		exit(0);
	}
	if (optind + 1 != argc)
		return bad_usage("%s", optind >= argc
		                           ? "give the recording to report"
		                           : "expected exactly one FILE");
	if (o->to > 0 && o->from > o->to)
		return bad_usage("%s", "--from is after --to");
	*file = argv[optind];
	o->format = cli_format_for(o);
	return 0;
}

/* The whole of path into *data; an error's words in detail. */
static bool slurp(const char *path, char **data, size_t *len, char *detail,
                  size_t detailsz)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 0;
	*data = NULL;
	*len = 0;
	while (f && !ferror(f) && !feof(f)) {
		if (*len == cap) {
			char *n = realloc(*data, cap = cap ? cap * 2 : 1 << 20);
			if (!n)
				break;
			*data = n;
		}
		*len += fread(*data + *len, 1, cap - *len, f);
	}
	bool ok = f && feof(f) && !ferror(f);
	if (!ok)
		snprintf(detail, detailsz, "%s", strerror(errno ? errno : ENOMEM));
	if (f)
		fclose(f);
	return ok;
}

struct out {
	FILE *f;
	int err;
};

static bool write_out(void *ctx, const void *data, size_t n)
{
	struct out *o = ctx;
	if (fwrite(data, 1, n, o->f) == n)
		return true;
	o->err = errno;
	return false;
}

/* The exit status for rc, said if it is an error; a reader that went
 * away (a pipe to head) is none. */
static int said(const struct pyd_opts *o, int rc, int err)
{
	if (rc == PYD_E_WRITE)
		return cli_cannot_write(PROG, o->output, "the samples", err);
	if (rc == PYD_E_NOMEM)
		fprintf(stderr, PROG ": out of memory\n");
	return rc;
}

/* A streamed format: the samples go out as the replay feeds them. */
static int replay_streamed(const struct pyd_opts *o, const char *data,
                           size_t len, struct pyd_profile *p,
                           struct pyd_replay *r, enum pyd_err *err,
                           char *detail, size_t detailsz)
{
	struct out out = {o->output ? fopen(o->output, "wb") : stdout, 0};
	struct pyd_stream *s = NULL;
	int rc = 0;
	if (!out.f) {
		out.err = errno;
		rc = PYD_E_WRITE;
	} else if (pyd_stream_open(p, o->format, write_out, &out, &s)) {
		rc = PYD_E_NOMEM;
	} else {
		*err = pyd_replay(data, len, p, r, detail, detailsz);
		if (!pyd_stream_close(s))
			rc = out.err ? PYD_E_WRITE : PYD_E_NOMEM;
	}
	if (out.f && out.f != stdout && fclose(out.f) && !rc) {
		out.err = errno;
		rc = PYD_E_WRITE;
	}
	return said(o, rc, out.err);
}

static void summary(const struct pyd_opts *o, const struct pyd_profile *p,
                    const struct pyd_replay *r)
{
	const struct pyd_prof_meta *m = &p->meta;
	fprintf(stderr, PROG ": %llu samples over %.2f s",
	        (unsigned long long)m->samples, m->duration_s);
	if (r->ended && !o->from && !o->to)
		fprintf(stderr, "; the run: %llu rounds, %llu errors, %llu "
		        "missed ticks", (unsigned long long)m->ticks,
		        (unsigned long long)m->errors,
		        (unsigned long long)m->missed);
	fprintf(stderr, ".\n");
	if (o->output)
		fprintf(stderr, PROG ": wrote %s (%s).\n", o->output,
		        o->format->name);
}

/* What the replay found wrong with file, said; its exit status. */
static int explain(const char *file, const struct pyd_profile *p,
                   const struct pyd_replay *r, enum pyd_err err,
                   const char *detail)
{
	struct pyd_explain e = {.prog = PROG, .shell = PYD_SHELL_CLI,
	                        .file = file, .detail = detail,
	                        .count = p->meta.samples,
	                        .partial = p->meta.samples > 0};
	if (err) {
		cli_say(&e, err == PYD_E_PROFILE ? PYD_SAY_BAD_RECORDING
		                                 : PYD_SAY_ERROR, err);
		return err;
	}
	if (r->cut)
		cli_say(&e, PYD_SAY_RECORDING_CUT, PYD_OK);
	return 0;
}

int report_main(int argc, char **argv)
{
	struct pyd_opts o;
	const char *file;
	int rc = parse_args(argc, argv, &o, &file);
	if (rc)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	char detail[512] = "", *data;
	size_t len;
	struct pyd_replay r = {.from_s = o.from, .to_s = o.to};
	if (!slurp(file, &data, &len, detail, sizeof detail)) {
		free(data);
		struct pyd_explain e = {.prog = PROG, .shell = PYD_SHELL_CLI,
		                        .file = file, .detail = detail};
		cli_say(&e, PYD_SAY_CANNOT_READ, PYD_E_PROFILE);
		return PYD_E_PROFILE;
	}
	struct pyd_profile *p = pyd_profile_new(!o.no_lines, 0);
	enum pyd_err err = PYD_OK;
	if (!p)
		rc = PYD_E_NOMEM;
	else if (o.format->stream)
		rc = replay_streamed(&o, data, len, p, &r, &err, detail,
		                     sizeof detail);
	else if (!(err = pyd_replay(data, len, p, &r, detail, sizeof detail)) ||
	         p->meta.samples)
		rc = cli_write_profile(PROG, p, &o, o.output, NULL);
	free(data);
	if (p && !o.quiet && !rc && (!err || p->meta.samples))
		summary(&o, p, &r);
	int why = p ? explain(file, p, &r, err, detail) : 0;
	pyd_profile_free(p);
	return rc ? rc : why;
}
