/*
 * pystack-dump sample: the sampling profiler's frontend.  Options, the
 * clock, signals, launching a program, the live status line and writing
 * the report; the sampling itself is core's.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include "cli.h"
#include "target.h"

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
    "                            in, joined to the tasks awaiting them\n";

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
	o->opt.format = format_for(&o->opt);
	return 0;
}

/* ---- counting reads ---- */

struct counted {
	struct pyd_memsrc src;
	const struct pyd_memsrc *in;
	uint64_t reads;
};

static enum pyd_err c_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct counted *c = ctx;
	c->reads++;
	return c->in->read(c->in->ctx, addr, buf, len);
}

static enum pyd_err c_readv(void *ctx, const struct pyd_iov *v, size_t n,
                            size_t *done)
{
	struct counted *c = ctx;
	c->reads++;
	return pyd_readv(c->in, v, n, done);
}

static enum pyd_err c_thread_run(void *ctx, int64_t tid,
                                 enum pyd_thread_run *run)
{
	struct counted *c = ctx;
	c->reads++;
	return c->in->thread_run(c->in->ctx, tid, run);
}

static enum pyd_err c_threads(void *ctx, const struct pyd_os_thread **t,
                              size_t *n)
{
	struct counted *c = ctx;
	return c->in->threads(c->in->ctx, t, n);
}

/* Every read through src counted, for the summary's reads per sample. */
static void count_reads(struct counted *c, const struct pyd_memsrc *in)
{
	*c = (struct counted){.in = in};
	c->src = *in;
	c->src.ctx = c;
	c->src.read = c_read;
	c->src.readv = c_readv;
	c->src.thread_run = in->thread_run ? c_thread_run : NULL;
	c->src.threads = in->threads ? c_threads : NULL;
	c->src.mappings = NULL;
	c->src.symbol = NULL;
	c->src.open_file = NULL;
}

/* ---- the run ---- */

struct run {
	struct sample_opts *o;
	struct target t;
	struct counted counted;
	struct pyd_session *sess;
	struct pyd_sampler *sp;
	struct pyd_profile *prof;
	pid_t child; /* launched program, or 0 */
	int child_status;
	bool child_reaped;
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
	struct target_spec spec = {.pid = r->o->pid};
	struct pyd_runtime rt;
	enum pyd_err err = target_open(&spec, &r->t, detail, detailsz);
	if (!err)
		err = target_runtime(&r->t, &rt, detail, detailsz);
	if (err)
		return err;
	count_reads(&r->counted, r->t.src);
	err =
	    pyd_session_open(&r->counted.src, &rt, &r->sess, detail, detailsz);
	if (!err)
		err = pyd_sampler_open(r->sess, r->o->opt.mode, r->prof,
		                       &r->sp);
	if (err == PYD_E_UNSUPPORTED && r->sess)
		snprintf(detail, detailsz,
		         "-m async is not supported on Python %s: it needs "
		         "asyncio task graphs (CPython 3.7 and later)",
		         pyd_session_version(r->sess));
	return err;
}

static void detach(struct run *r)
{
	pyd_sampler_close(r->sp);
	pyd_session_close(r->sess);
	target_close(&r->t);
	r->sp = NULL;
	r->sess = NULL;
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
	fprintf(stderr,
	        "\r\033[Ksampling pid %d: %.1fs, %llu samples, %.0f/s, %llu "
	        "errors, %llu missed",
	        r->o->pid, secs, (unsigned long long)m->samples,
	        secs > 0 ? (double)m->ticks / secs : 0.0,
	        (unsigned long long)m->errors, (unsigned long long)m->missed);
}

static bool stop_requested(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
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
	    .ctx = r,
	};
	r->start = r->shown = now_ns();
	enum pyd_sample_end e = pyd_sample_loop(r->sp, &l, &r->prof->meta);
	if (tty)
		fputs("\r\033[K", stderr);
	r->target_exited = e == PYD_END_EXITED;
	r->why = e == PYD_END_STOPPED && stop_signal != SIGINT
	             ? "terminated"
	             : pyd_sample_end_text(e);
}

static int output(struct run *r)
{
	pyd_profile_finish(r->prof);
	struct pyd_buf b = {0};
	if (pyd_report_prof(&b, r->prof, r->o->opt.format, r->o->opt.threads,
	                    r->o->opt.limit)) {
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
	if (!ok && errno != EPIPE) {
		fprintf(stderr, "pystack-dump sample: cannot write %s: %s\n",
		        r->o->opt.output ? r->o->opt.output : "the profile",
		        strerror(errno));
		return PYD_E_READ;
	}
	return 0;
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
	m->python_version = pyd_session_version(r->sess);
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
		fprintf(stderr,
		        "pystack-dump sample: %s: %s; nothing was "
		        "sampled.\n",
		        r->o->command[0], detail);
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
	struct run r = {.o = &o};
	catch_signals();
	r.prof = pyd_profile_new(!o.opt.no_lines, 0);
	if (!r.prof)
		return PYD_E_NOMEM;
	char detail[512] = "";
	enum pyd_err err = o.command ? launch(&r, detail, sizeof detail)
	                             : attach(&r, detail, sizeof detail);
	if (err && o.command) {
		rc = launch_error(&r, err, detail);
	} else if (err == PYD_E_UNSUPPORTED && r.sess) {
		fprintf(stderr, "pystack-dump sample: %s.\n", detail);
		rc = err;
	} else if (err) {
		rc = cli_report_error(err, &(struct target_spec){.pid = o.pid}, detail);
	} else {
		fill_meta(&r);
		sample_loop(&r);
		r.prof->meta.reads = r.counted.reads;
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
