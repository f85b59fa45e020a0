/*
 * The options of every command, declared once (options.c): their names
 * in the CLI (pystack-dump, pystack-dump sample) and in the debuggers
 * (py-bt, py-tasks, py-sample), what their values are and where they go.
 * The CLI parses argv with getopt_long from the table, the debugger
 * commands match their words against the same rows, and each kind of
 * value (rate, mode, format, count, ...) is checked, and its mistake
 * explained, in one place.
 */
#ifndef PYD_FRONTEND_OPTIONS_H
#define PYD_FRONTEND_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/report/profiles.h"

/* The commands an option belongs to, a bit each. */
#define PYD_IN_DUMP     1u  /* pystack-dump PID */
#define PYD_IN_SAMPLE   2u  /* pystack-dump sample PID */
#define PYD_IN_BT       4u  /* py-bt */
#define PYD_IN_TASKS    8u  /* py-tasks */
#define PYD_IN_PYSAMPLE 16u /* py-sample */
#define PYD_IN_MOVE     32u /* py-up, py-down */
#define PYD_IN_PRINT    64u /* py-print */
#define PYD_IN_TOP      128u /* pystack-dump top PID */
#define PYD_IN_DIFF     256u /* pystack-dump diff BASE NEW */
#define PYD_IN_REPORT   512u /* pystack-dump report FILE */
#define PYD_IN_SERVE    1024u /* pystack-dump serve [PID...|--all] */

/* Every option's value, whatever the command: what it was not given
 * stays as pyd_opts_* set it (rate 1000, serve's 100, mode wall, limit 40, repr
 * PYD_REPR_DEFAULTS, else 0). */
struct pyd_opts {
	/* where the dump reads from (pystack-dump) */
	const char *core, *exe, *sysroot, *snapshot;
	const char *coredump; /* --coredump: a pid or program whose kept core */
	const char *save; /* --save-snapshot */
	bool json, locked, no_source, tasks, table;
	bool greenlets; /* --greenlets */
	/* --locals (py-bt -l) and how much of each value it shows */
	bool locals;
	struct pyd_repr_limits repr;
	bool all, native; /* py-bt all, serve --all; pystack-dump --native */
	const char *listen; /* serve --listen ADDR:PORT */
	bool native_all;  /* --native-all */
	bool subprocesses; /* --subprocesses */
	uint64_t levels;  /* py-up, py-down N (0: not given, 1) */
	const char *name; /* py-print NAME */
	/* sampling (pystack-dump sample, py-sample) */
	double rate;      /* Hz; 0: as fast as possible */
	double duration;  /* seconds; 0: unbounded */
	uint64_t samples; /* rounds; 0: unbounded */
	enum pyd_sample_mode mode;
	const struct pyd_prof_format *format; /* NULL: not chosen */
	const char *diff_format; /* diff -f: a pyd_diff_formats name */
	const char *output;
	double every; /* sample --every: seconds a profile; 0: one */
	/* sample --push URL: each interval's pprof sent to Pyroscope, under
	 * --app's name (NULL: the process's) with --labels k=v,... */
	const char *push, *app, *labels;
	double from, to; /* report --from, --to: seconds; 0: the ends */
	bool no_lines, threads, quiet;
	bool no_gc; /* no <GC> frames */
	bool idle;  /* the table keeps idle threads */
	bool live; /* sample --live: the top view */
	size_t limit;
	/* met one of these: the CLI parsed no further */
	bool help, version, list_formats, debugger_setup;
};

/*
 * argv's options for the CLI command `in` (PYD_IN_DUMP,
 * PYD_IN_SAMPLE, PYD_IN_TOP, PYD_IN_DIFF, PYD_IN_REPORT or PYD_IN_SERVE), with
 * getopt_long: true with optind at the first
 * operand (or at help, version or list_formats, set in o); false with
 * the message (without the program's name) in err.
 */
bool pyd_opts_getopt(int argc, char **argv, unsigned in, struct pyd_opts *o,
                     char *err, size_t errsz);

/*
 * The words w[0..n) of debugger command name (its bit: in): false with
 * "name: what 'word'. Try: help name" in err.
 */
bool pyd_opts_words(unsigned in, const char *name, char **w, size_t n,
                    struct pyd_opts *o, char *err, size_t errsz);

/* The debugger words (blank-separated) of the i-th option of the
 * commands in, from 0; NULL past the last. */
const char *pyd_opts_nth_words(unsigned in, size_t i);

/* The most words a debugger command of in takes: each of its options
 * once, with its value, and its operand. */
size_t pyd_opts_most_words(unsigned in);

#endif
