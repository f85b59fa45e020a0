/*
 * The one table of options (frontend/options.c) read both ways: argv as
 * pystack-dump and pystack-dump sample parse it, and the debugger
 * commands' words; the same value checked by one parser, each shell
 * explaining a mistake in its own words.
 */
#include <string.h>
#include <unistd.h>

#include "../../frontend/commands.h"
#include "check.h"

#define ARGC(a) ((int)(sizeof a / sizeof *a) - 1)

static bool same(const char *got, const char *want)
{
	if (!strcmp(got, want))
		return true;
	fprintf(stderr, "got  %s\nwant %s\n", got, want);
	return false;
}

static void test_dump_argv(void)
{
	char *argv[] = {"pystack-dump", "-j", "--core", "c", "--exe=e",
	                "--tasks", "--no-source", "1", "--json", NULL};
	struct pyd_opts o;
	char err[256];
	CHECK_EQ(pyd_opts_getopt(ARGC(argv), argv, PYD_IN_DUMP, &o, err,
	                         sizeof err),
	         true);
	CHECK_EQ(o.json && o.tasks && o.no_source && !o.table, true);
	CHECK_EQ(same(o.core, "c") && same(o.exe, "e"), true);
	/* Options after the PID count too: getopt moves the PID last. */
	CHECK_EQ(optind, 8);
	CHECK_EQ(same(argv[optind], "1"), true);

	char *bad[] = {"pystack-dump", "--rate", "5", "1", NULL};
	CHECK_EQ(pyd_opts_getopt(ARGC(bad), bad, PYD_IN_DUMP, &o, err,
	                         sizeof err),
	         false);
	CHECK_EQ(same(err, "option '--rate' is unknown or needs a value"),
	         true);

	char *help[] = {"pystack-dump", "-h", "--bogus", NULL};
	CHECK_EQ(pyd_opts_getopt(ARGC(help), help, PYD_IN_DUMP, &o, err,
	                         sizeof err),
	         true);
	CHECK_EQ(o.help, true);
}

static void test_sample_argv(void)
{
	char *argv[] = {"sample", "-r",      "max",   "1",  "-m",
	                "cpu",    "--limit", "0",     "-n", "1e3",
	                "-d",     "2.5",     "-f",    "pprof", NULL};
	struct pyd_opts o;
	char err[256];
	CHECK_EQ(pyd_opts_getopt(ARGC(argv), argv, PYD_IN_SAMPLE, &o, err,
	                         sizeof err),
	         true);
	CHECK_EQ(o.rate == 0 && o.duration == 2.5, true);
	CHECK_EQ(o.samples, 1000);
	CHECK_EQ(o.mode, PYD_SAMPLE_CPU);
	CHECK_EQ(o.limit, 0);
	CHECK_EQ(o.format && same(o.format->name, "pprof"), true);

	static const struct {
		const char *opt, *value, *err;
	} bad[] = {
	    {"-r", "fast", "--rate wants a number of samples per second or "
	                   "'max', not 'fast'"},
	    {"-r", "1e8", "--rate wants a number of samples per second or "
	                  "'max', not '1e8'"},
	    {"-n", "1.5", "--samples wants a count, not '1.5'"},
	    {"-d", "0", "--duration wants seconds, not '0'"},
	    {"--limit", "x", "--limit wants a count, not 'x'"},
	    {"-m", "nope", "unknown mode 'nope' (wall, cpu, gil, async, exception, greenlet)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *a[] = {"sample", (char *)bad[i].opt,
		             (char *)bad[i].value, "1", NULL};
		CHECK_EQ(pyd_opts_getopt(ARGC(a), a, PYD_IN_SAMPLE, &o, err,
		                         sizeof err),
		         false);
		CHECK_EQ(same(err, bad[i].err), true);
	}
}

static void test_debugger_words(void)
{
	static const struct {
		const char *cmd, *args, *err; /* err NULL: parses */
	} cases[] = {
	    {"py-bt", "all -n --json", NULL},
	    {"py-bt", "bogus",
	     "py-bt: unexpected argument 'bogus'. Try: help py-bt"},
	    {"py-bt", "-t", "py-bt: unexpected argument '-t'. Try: help py-bt"},
	    {"py-tasks", "-t -j", NULL},
	    {"py-tasks", "--table",
	     "py-tasks: unexpected argument '--table'. Try: help py-tasks"},
	    {"py-sample", "",
	     "py-sample: how many samples? e.g. py-sample 1000. "
	     "Try: help py-sample"},
	    {"py-sample", "10 -r fast",
	     "py-sample: bad rate 'fast'. Try: help py-sample"},
	    {"py-sample", "10 -m nope",
	     "py-sample: unknown mode 'nope'. Try: help py-sample"},
	    {"py-sample", "10 --format nope",
	     "py-sample: unknown format 'nope'. Try: help py-sample"},
	    {"py-sample", "10 -o",
	     "py-sample: missing value for '-o'. Try: help py-sample"},
	    {"py-sample", "10 20",
	     "py-sample: unexpected argument '20'. Try: help py-sample"},
	    {"py-sample", "10 -n",
	     "py-sample: unexpected argument '-n'. Try: help py-sample"},
	    {"py-nope", "",
	     "pystack-dump: no such command 'py-nope'. Try: help "
	     "pystack-dump"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct pyd_cmd c;
		char err[256] = "";
		bool ok = pyd_cmd_parse(cases[i].cmd, cases[i].args, &c, err,
		                        sizeof err);
		CHECK_EQ(ok, !cases[i].err);
		if (cases[i].err)
			CHECK_EQ(same(err, cases[i].err), true);
	}

	struct pyd_cmd c;
	char err[256];
	CHECK_EQ(pyd_cmd_parse("py-sample",
	                       "-o out.json 500 --rate max -m async", &c, err,
	                       sizeof err),
	         true);
	CHECK_EQ(c.kind, PYD_CMD_SAMPLE);
	CHECK_EQ(c.opt.samples, 500);
	CHECK_EQ(c.opt.rate == 0, true);
	CHECK_EQ(c.opt.mode, PYD_SAMPLE_ASYNC);
	CHECK_EQ(same(c.opt.output, "out.json"), true);
	/* The debuggers' limit on rates is not the CLI's. */
	CHECK_EQ(pyd_cmd_parse("py-sample", "5 -r 1e8", &c, err, sizeof err),
	         true);
	CHECK_EQ(c.opt.rate == 1e8, true);
}

/* The most words each command takes: the gdb command file passes on no
 * more than one beyond the most of them. */
static void test_most_words(void)
{
	CHECK_EQ(pyd_cmd_most_words("py-bt"), 5); /* all -n -N -l -j */
	CHECK_EQ(pyd_cmd_most_words("py-tasks"), 2);
	/* N, --rate R, --mode M, --format F, -o FILE, --no-gc */
	CHECK_EQ(pyd_cmd_most_words("py-sample"), 10);
	CHECK_EQ(pyd_cmd_most_words("py-up"), 1);
	CHECK_EQ(pyd_cmd_most_words("py-print"), 1);
	CHECK_EQ(pyd_cmd_most_words("py-frame"), 0);
	CHECK_EQ(pyd_cmd_most_words("py-nothing"), 0);
}

int main(void)
{
	opterr = 0; /* as pystack-dump: its own message, not getopt's */
	test_dump_argv();
	test_sample_argv();
	test_debugger_words();
	test_most_words();
	return check_done("test_options");
}
