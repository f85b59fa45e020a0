/*
 * pystack-dump sample: the sampling profiler's frontend.  Options, the
 * clock, signals, launching a program, the live status line and writing
 * the report; the sampling itself is core's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/pyd_profile.h"
#include "../core/report/report.h"
#include "../frontend/options.h"
#include "../frontend/source.h"
#include "cli.h"
#include "procset.h"

static const char usage_head[] =
    "Usage: pystack-dump sample [OPTIONS] PID\n"
    "       pystack-dump sample [OPTIONS] -- PROGRAM [ARGS...]\n"
    "\n"
    "Sample the Python stacks of process PID (or of PROGRAM, launched and\n"
    "profiled from its start) without stopping it, until the duration\n"
    "ends, Ctrl-C, or the target exits; then write the profile. Samples\n"
    "are aggregated into call trees as they come: memory stays flat\n"
    "however long you sample.\n"
    "\n"
    "Options:\n"
    "  -r, --rate HZ|max   samples per second (default 1000); max samples\n"
    "                      as fast as possible (hundreds of thousands/s)\n"
    "  -d, --duration SEC  stop after SEC seconds (default: Ctrl-C or exit)\n"
    "  -n, --samples N     stop after N sampling rounds\n"
    "  -m, --mode MODE     wall  every thread, every tick (default)\n"
    "                      cpu   only threads on a CPU at the tick\n"
    "                      gil   only the thread holding the GIL\n"
    "                      async every asyncio task: running ones at their\n"
    "                            code, waiting ones at the await they sit\n"
    "                            in, joined to the tasks awaiting them\n"
    "                      exception  only threads raising an exception\n"
    "                            or in an except/finally handling one\n"
    "      --no-gc         no <GC> frame: by default a thread running the\n"
    "                      garbage collector has one on top of its stack\n"
    "                      (CPython 3.7 and later; 3.6 has no marker)\n"
    "      --idle          keep idle threads (never seen on a CPU) in the\n"
    "                      table; by default it leaves them out\n"
    "      --subprocesses  also every process descended from PID (or\n"
    "                      PROGRAM) that runs CPython: multiprocessing\n"
    "                      workers, pre-fork servers' workers, subprocess\n"
    "                      children, found as they start (every 100 ms)\n"
    "                      and kept when they exit. Reports keep each\n"
    "                      process apart; the summary lists them and the\n"
    "                      descendants skipped (not Python)\n";

static const char usage_tail[] =
    "  -o, --output FILE   write there (default stdout); without -f the\n"
    "                      name's suffix picks the format (-o above),\n"
    "                      else collapsed\n"
    "      --list-formats  print each format, its -o suffixes and what it\n"
    "                      is, one per line (tab-separated), and exit\n"
    "      --no-lines      aggregate by function, not by line\n"
    "      --threads       one tree per thread (default: threads merged)\n"
    "      --limit N       table rows (default 40; 0: all)\n"
    "  -q, --quiet         no status line and no summary on stderr\n"
    "      --live          the live top view instead of a report (see\n"
    "                      pystack-dump top --help)\n"
    "  -h, --help          show this help\n"
    "\n"
    "On a terminal a status line shows the rate achieved, samples, errors\n"
    "and missed ticks; at the end a summary gives the same and the reads\n"
    "per sample. Exit status 0 whenever sampling ran (even if the target\n"
    "exited or you pressed Ctrl-C); otherwise as for pystack-dump PID.\n"
    "\n"
    "Examples:\n"
    "  pystack-dump sample 1234                 # table until Ctrl-C\n"
    "  pystack-dump sample -d 10 -o prof.html 1234\n"
    "  pystack-dump sample -m async -d 5 1234   # where tasks await\n"
    "  pystack-dump sample -r max -f collapsed -- python3 app.py\n";

/* The -f part of the help, from the table of formats: each summary line
 * in the third column, then the suffixes that pick it. */
static void usage(void)
{
	fputs(usage_head, stdout);
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++) {
		const char *line = f->summary;
		printf("%-22s%-12s", f == pyd_prof_formats ? "  -f, --format FMT"
		                                           : "",
		       f->name);
		for (const char *nl; (nl = strchr(line, '\n')); line = nl + 1)
			printf("%.*s\n%34s", (int)(nl - line), line, "");
		printf("%s\n", line);
		if (!f->suffixes[0])
			continue;
		printf("%34s(-o", "");
		for (size_t i = 0; i < 3 && f->suffixes[i]; i++)
			printf(" *%s", f->suffixes[i]);
		printf(")\n");
	}
	fputs(usage_tail, stdout);
}

/* --list-formats: for scripts and the tests. */
static void list_formats(void)
{
	for (const struct pyd_prof_format *f = pyd_prof_formats; f->name; f++) {
		printf("%s\t", f->name);
		for (size_t i = 0; i < 3 && f->suffixes[i]; i++)
			printf("%s%s", i ? " " : "", f->suffixes[i]);
		printf("\t");
		for (const char *c = f->summary; *c; c++)
			putchar(*c == '\n' ? ' ' : *c);
		putchar('\n');
	}
}

struct sample_opts {
	int pid;
	char **command; /* launch this instead of attaching */
	struct pyd_opts opt;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump sample: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump sample --help'.\n");
	return PYD_E_USAGE;
}

/* The message table's words for sample, about file if it names one. */
static void say(enum pyd_say what, enum pyd_err err, const char *file,
                const char *detail)
{
	struct pyd_explain e = {.prog = "pystack-dump sample",
	                        .shell = PYD_SHELL_CLI,
	                        .file = file,
	                        .detail = detail};
	cli_say(&e, what, err);
}

/* -f, else the output's name, else by where the output goes. */
static const struct pyd_prof_format *format_for(const struct pyd_opts *o)
{
	if (o->format)
		return o->format;
	if (o->output)
		return pyd_prof_format_for_file(o->output);
	return pyd_prof_format_named(isatty(STDOUT_FILENO) ? "table"
	                                                   : "collapsed");
}

static int parse_sample_args(int argc, char **argv, struct sample_opts *o)
{
	char err[512];
	*o = (struct sample_opts){0};
	if (!pyd_opts_getopt(argc, argv, PYD_IN_SAMPLE, &o->opt, err,
	                     sizeof err))
		return bad_usage("%s", err);
	if (o->opt.help) {
		usage();
		exit(0);
	}
	if (o->opt.list_formats) {
		list_formats();
		exit(0);
	}
	int rc;
	if (optind > 0 && !strcmp(argv[optind - 1], "--")) {
		if (optind >= argc)
			return bad_usage("%s", "nothing to launch after --");
		o->command = argv + optind;
	} else if (optind + 1 != argc) {
		return bad_usage("%s", optind >= argc
		                           ? "give a PID, or -- PROGRAM "
		                             "to launch"
		                           : "expected exactly one PID");
	} else if ((rc = cli_parse_pid(argv[optind], &o->pid))) {
		return rc;
	}
	if (o->opt.live && (o->command || o->opt.format || o->opt.output))
		return bad_usage("%s", "--live shows a PID's top view: not with "
		                       "-- PROGRAM, -f or -o");
	o->opt.format = format_for(&o->opt);
	return 0;
}

/* ---- the run ---- */

struct run {
	struct sample_opts *o;
	struct procset ps;
	struct pyd_profile *prof;
	pid_t child; /* launched program, or 0 */
	int child_status;
	bool child_reaped;
	/* The target's root directory (/proc/PID/root), held open so that
	 * its source files can be read once it has exited; -1 if not. */
	int root_fd;
	const char *why;      /* why sampling stopped */
	bool target_exited;   /* ... because the target is gone */
	int64_t start, shown; /* when sampling began, the status line shown */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static enum pyd_err attach(struct run *r, char *detail, size_t detailsz)
{
	enum pyd_err err = procset_open(&r->ps, r->o->pid, r->prof,
	                                r->o->opt.mode, r->o->opt.subprocesses,
	                                detail, detailsz);
	char root[64];
	snprintf(root, sizeof root, "/proc/%d/root", r->o->pid);
	if (!err)
		r->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return err;
}

static void detach(struct run *r)
{
	procset_close(&r->ps);
	if (r->root_fd >= 0)
		close(r->root_fd);
	r->root_fd = -1;
}

/* Source lines as the dump reads them, through the target's root (the
 * held one: the target may be gone); the heat map shows them. */
static struct source_cache *source_of(const struct run *r)
{
	char root[64] = "";
	if (r->root_fd >= 0)
		snprintf(root, sizeof root, "/proc/self/fd/%d", r->root_fd);
	return source_cache_new(root);
}

static bool child_gone(struct run *r)
{
	if (!r->child || r->child_reaped)
		return r->child_reaped;
	if (waitpid(r->child, &r->child_status, WNOHANG) == r->child)
		r->child_reaped = true;
	return r->child_reaped;
}

/*
 * Launch the program and attach once it runs Python: the exec'd file may
 * be a wrapper script, and the interpreter needs a moment to set up its
 * runtime, so keep trying (for up to 10 s) until a sampler opens.
 */
static enum pyd_err launch(struct run *r, char *detail, size_t detailsz)
{
	pid_t pid = fork();
	if (pid < 0)
		return PYD_E_NOMEM;
	if (pid == 0) {
		execvp(r->o->command[0], r->o->command);
		fprintf(stderr, "pystack-dump sample: cannot run %s: %s\n",
		        r->o->command[0], strerror(errno));
		_exit(127);
	}
	r->child = pid;
	r->o->pid = pid;
	enum pyd_err err = PYD_E_NOTPYTHON;
	int64_t start = now_ns(), give_up = start + 10000000000LL;
	while (!stop_signal && !child_gone(r) && now_ns() < give_up) {
		err = attach(r, detail, detailsz);
		/* While the child is in execve the kernel refuses to let it be
		 * read (EPERM): a refusal that lasts a second is a real one. */
		if (!err || err == PYD_E_UNSUPPORTED ||
		    (err == PYD_E_PERM && now_ns() - start > 1000000000LL))
			return err;
		detach(r);
		usleep(2000);
	}
	if (child_gone(r) || stop_signal) {
		snprintf(detail, detailsz, "%s before it ran Python",
		         stop_signal ? "interrupted" : "the program exited");
		return PYD_E_EXITED;
	}
	return err;
}

/* The live line on a terminal, five times a second. */
static void status_line(void *ctx, const struct pyd_prof_meta *m)
{
	struct run *r = ctx;
	int64_t now = now_ns();
	if (now - r->shown < 200000000LL)
		return;
	r->shown = now;
	double secs = (double)(now - r->start) / 1e9;
	size_t more = procset_sampling(&r->ps);
	more -= more > 0;
	fprintf(stderr,
	        "\r\033[Ksampling pid %d%s: %.1fs, %llu samples, %.0f/s, %llu "
	        "errors, %llu missed",
	        r->o->pid,
	        !r->o->opt.subprocesses ? ""
	        : more == 1             ? " and 1 more"
	        : more                  ? " and more"
	                                : "",
	        secs, (unsigned long long)m->samples,
	        secs > 0 ? (double)m->ticks / secs : 0.0,
	        (unsigned long long)m->errors, (unsigned long long)m->missed);
}

static bool stop_requested(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
}

static enum pyd_err sample_round(void *ctx, unsigned *nstacks)
{
	struct run *r = ctx;
	return procset_round(&r->ps, nstacks);
}

static void sample_loop(struct run *r)
{
	bool tty = !r->o->opt.quiet && isatty(STDERR_FILENO);
	struct pyd_sample_loop l = {
	    .rate = r->o->opt.rate,
	    .max_rounds = r->o->opt.samples,
	    .max_seconds = r->o->opt.duration,
	    .stop = stop_requested,
	    .tick = tty ? status_line : NULL,
	    .round = sample_round,
	    .ctx = r,
	};
	r->start = r->shown = now_ns();
	enum pyd_sample_end e = pyd_sample_loop(NULL, &l, &r->prof->meta);
	if (tty)
		fputs("\r\033[K", stderr);
	r->target_exited = e == PYD_END_EXITED;
	r->why = e == PYD_END_STOPPED && stop_signal != SIGINT
	             ? "terminated"
	             : pyd_sample_end_text(e);
}

/* The table leaves idle threads out, unless --idle. */
static bool hides_idle(const struct run *r)
{
	return !r->o->opt.idle && !strcmp(r->o->opt.format->name, "table");
}

static int output(struct run *r)
{
	pyd_profile_finish(r->prof);
	struct pyd_buf b = {0};
	struct pyd_profile *active =
	    hides_idle(r) ? pyd_profile_active(r->prof) : NULL;
	struct source_cache *sc = source_of(r);
	struct pyd_prof_opts po = {.per_thread = r->o->opt.threads,
	                           .limit = r->o->opt.limit,
	                           .source_line = source_cache_line,
	                           .source_ctx = sc};
	enum pyd_err err =
	    hides_idle(r) && !active
	        ? PYD_E_NOMEM
	        : pyd_report_prof(&b, active ? active : r->prof,
	                          r->o->opt.format, &po);
	source_cache_free(sc);
	if (err) {
		pyd_profile_free(active);
		pyd_buf_free(&b);
		fprintf(stderr, "pystack-dump sample: out of memory\n");
		return PYD_E_NOMEM;
	}
	FILE *f = r->o->opt.output ? fopen(r->o->opt.output, "wb") : stdout;
	bool ok = f && (!b.len || fwrite(b.data, 1, b.len, f) == b.len);
	if (f && f != stdout)
		ok &= fclose(f) == 0;
	else if (f)
		ok &= fflush(f) == 0;
	pyd_buf_free(&b);
	pyd_profile_free(active);
	if (!ok && errno != EPIPE) {
		say(PYD_SAY_CANNOT_WRITE, PYD_E_READ,
		    r->o->opt.output ? r->o->opt.output : "the profile",
		    strerror(errno));
		return PYD_E_READ;
	}
	return 0;
}

/* --subprocesses: what each process gave, and who was left out. */
static void processes_summary(const struct run *r)
{
	const struct pyd_profile *p = r->prof;
	fprintf(stderr, "pystack-dump sample: %zu process%s:", p->nprocesses,
	        p->nprocesses == 1 ? "" : "es");
	for (size_t i = 0; i < p->nprocesses; i++) {
		uint64_t n = 0;
		for (size_t t = 0; t < p->nthreads; t++)
			if (p->threads[t].process == i)
				n += p->nodes[p->threads[t].node].total;
		fprintf(stderr, "%s pid %d (%llu samples%s)", i ? "," : "",
		        p->processes[i].pid, (unsigned long long)n,
		        p->processes[i].exited ? ", exited" : "");
	}
	fputs(".\n", stderr);
	const struct procset *ps = &r->ps;
	for (size_t i = 0; i < ps->nskipped && i < PROCSET_SKIPPED_SHOWN; i++)
		fprintf(stderr, "pystack-dump sample: skipped %s.\n",
		        ps->skipped[i]);
	if (ps->nskipped > PROCSET_SKIPPED_SHOWN)
		fprintf(stderr, "pystack-dump sample: ... and %zu more skipped.\n",
		        ps->nskipped - PROCSET_SKIPPED_SHOWN);
}

/* The idle threads the table left out. */
static void idle_summary(const struct run *r)
{
	size_t n = 0;
	for (size_t i = 0; hides_idle(r) && i < r->prof->nthreads; i++)
		n += pyd_prof_thread_idle(&r->prof->threads[i]);
	if (n)
		fprintf(stderr,
		        "pystack-dump sample: %zu idle thread%s (never seen on "
		        "a CPU) left out of the table; --idle keeps %s.\n",
		        n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
}

static void summary(const struct run *r)
{
	const struct pyd_prof_meta *m = &r->prof->meta;
	double rate = m->duration_s > 0 ? (double)m->ticks / m->duration_s : 0;
	fprintf(stderr,
	        "pystack-dump sample: %s after %.2f s. %llu samples in %llu "
	        "rounds (%.0f rounds/s), %llu errors (%.2f%%), %llu missed "
	        "ticks, %.2f reads per round.\n",
	        r->why, m->duration_s, (unsigned long long)m->samples,
	        (unsigned long long)m->ticks, rate,
	        (unsigned long long)m->errors,
	        m->ticks ? 100.0 * (double)m->errors / (double)m->ticks : 0.0,
	        (unsigned long long)m->missed,
	        m->ticks ? (double)m->reads / (double)m->ticks : 0.0);
	if (m->mode == PYD_SAMPLE_ASYNC)
		fprintf(stderr,
		        "pystack-dump sample: task samples on CPU %llu, "
		        "awaiting %llu.\n",
		        (unsigned long long)m->cpu_samples,
		        (unsigned long long)m->await_samples);
	if (r->o->opt.subprocesses)
		processes_summary(r);
	idle_summary(r);
	if (m->corrupt[0]) {
		struct pyd_explain e = {.prog = "pystack-dump sample",
		                        .shell = PYD_SHELL_CLI,
		                        .pid = m->pid,
		                        .detail = m->corrupt};
		cli_say(&e, PYD_SAY_SAMPLE_CORRUPT, PYD_E_READ);
	}
	if (r->prof->truncated)
		fprintf(stderr,
		        "pystack-dump sample: the call tree reached its "
		        "size limit; deeper new paths were folded into "
		        "their callers.\n");
	if (r->o->opt.output)
		fprintf(stderr, "pystack-dump sample: wrote %s (%s).\n",
		        r->o->opt.output, r->o->opt.format->name);
}

static void fill_meta(struct run *r)
{
	struct pyd_prof_meta *m = &r->prof->meta;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	m->pid = r->o->pid;
	m->python_version = r->prof->processes[0].python_version;
	m->mode = r->o->opt.mode;
	m->rate_hz = r->o->opt.rate;
	m->start_unix_us =
	    (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* A launched program's end: wait for it, and pass on its status. */
static int finish_child(struct run *r, int rc)
{
	if (!r->child)
		return rc;
	if (!child_gone(r)) {
		if (!stop_signal && !r->target_exited)
			fprintf(stderr,
			        "pystack-dump sample: waiting for "
			        "process %d to exit (Ctrl-C stops it).\n",
			        r->child);
		while (waitpid(r->child, &r->child_status, 0) < 0 &&
		       errno == EINTR)
			if (stop_signal)
				kill(r->child, SIGINT);
	}
	return rc;
}

/* A launched program that could not be sampled is not left running. */
static int launch_error(struct run *r, enum pyd_err err, const char *detail)
{
	if (err == PYD_E_EXITED) {
		say(PYD_SAY_LAUNCH_EXITED, err, r->o->command[0], detail);
		return err;
	}
	int rc = cli_report_error(err, &(struct target_spec){.pid = r->o->pid}, detail);
	if (!child_gone(r)) {
		fprintf(stderr, "pystack-dump sample: stopping %s (pid %d).\n",
		        r->o->command[0], r->o->pid);
		kill(r->child, SIGTERM);
	}
	return rc;
}

int sample_main(int argc, char **argv)
{
	struct sample_opts o;
	int rc = parse_sample_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.opt.live)
		return top_run(o.pid, &o.opt);
	struct run r = {.o = &o, .root_fd = -1};
	catch_signals();
	r.prof = pyd_profile_new(!o.opt.no_lines, 0);
	if (!r.prof)
		return PYD_E_NOMEM;
	r.prof->gc = !o.opt.no_gc;
	char detail[512] = "";
	enum pyd_err err = o.command ? launch(&r, detail, sizeof detail)
	                             : attach(&r, detail, sizeof detail);
	if (err && o.command) {
		rc = launch_error(&r, err, detail);
	} else if (err == PYD_E_UNSUPPORTED && r.ps.mode_unsupported) {
		say(PYD_SAY_MODE_UNSUPPORTED, err, NULL, detail);
		rc = err;
	} else if (err) {
		rc = cli_report_error(err, &(struct target_spec){.pid = o.pid}, detail);
	} else {
		fill_meta(&r);
		sample_loop(&r);
		r.prof->meta.reads = procset_reads(&r.ps);
		r.prof->by_process = o.opt.subprocesses;
		r.prof->meta.interval_s =
		    r.prof->meta.ticks
		        ? r.prof->meta.duration_s / (double)r.prof->meta.ticks
		        : 0;
		rc = output(&r);
		if (!o.opt.quiet)
			summary(&r);
	}
	detach(&r);
	pyd_profile_free(r.prof);
	return finish_child(&r, rc);
}
