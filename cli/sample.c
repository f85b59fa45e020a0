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

#include "../core/report/stream.h"
#include "../core/report/report.h"
#include "../frontend/options.h"
#include "../frontend/render.h"
#include "cli.h"
#include "push.h"
#include "../frontend/procset.h"

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
    "  -n, --samples N     stop after N sampling rounds\n";

static const char usage_mid[] =
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
    "                      raw and jsonl are written as samples are\n"
    "                      taken, flushed at least every second (raw)\n"
    "                      or tenth of a second (jsonl): a run killed\n"
    "                      leaves what came before. A raw recording\n"
    "                      (docs/recording-format.md) holds each\n"
    "                      sample's time, thread and stack: turn it into\n"
    "                      any format, or a time slice, with pystack-dump\n"
    "                      report (see pystack-dump report --help)\n"
    "  -o, --output FILE   write there (default, or -: stdout); without -f the\n"
    "                      name's suffix picks the format (-o above),\n"
    "                      else collapsed\n"
    "      --every SEC     write a profile every SEC seconds and keep\n"
    "                      sampling, each from fresh (memory stays flat):\n"
    "                      -o names the files through strftime at each\n"
    "                      interval's end, e.g. -o 'prof-%Y%m%dT%H%M%S.pb.gz'\n"
    "                      (a name twice: the later gets -2, -3 ... before\n"
    "                      its first dot).\n"
    "                      Not with -n, raw or jsonl (already streamed)\n"
    "      --push URL      send each --every interval's profile (default\n"
    "                      every 10 s) to Grafana Pyroscope at URL, e.g.\n"
    "                      http://pyroscope:4040 (POST /ingest, pprof;\n"
    "                      https, and user:password@ in the URL, work);\n"
    "                      -o writes files too. Sampling never waits for\n"
    "                      the server: 8 profiles wait in a queue, the\n"
    "                      oldest dropped when it is full; failed sends\n"
    "                      are tried again (up to 8 s apart), and at the\n"
    "                      end what is queued is sent for up to 5 s\n"
    "      --app NAME      Pyroscope's application name (default: the\n"
    "                      target's process name, e.g. python3.12)\n"
    "      --labels LIST   labels of every profile pushed, k=v,k2=v2\n"
    "                      (names: letters, digits, _ and .)\n"
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
    "and missed ticks; at the end a summary gives the same, when sampling\n"
    "started (UTC) and the reads per sample. An error is a round in which\n"
    "a thread's stack could not be read consistently (the running target\n"
    "changed it, or its thread list, during the read): the stacks not\n"
    "read are dropped, not recorded short, so many errors under-represent\n"
    "the threads that were changing. A missed tick is one the machine did\n"
    "not run the sampler in time for: the rounds taken stand for its time,\n"
    "so past a tenth of the ticks missed the summary says how far off a\n"
    "share can be.\n"
    "Exit status 0 whenever sampling ran (even if the target exited or\n"
    "you pressed Ctrl-C); 9 if a file could not be written or, with\n"
    "--push, a profile was not sent (dropped, refused, or unsent at the\n"
    "end); 6 if this build has no --push; otherwise as for pystack-dump\n"
    "PID.\n"
    "\n"
    "Examples:\n"
    "  pystack-dump sample 1234                 # table until Ctrl-C\n"
    "  pystack-dump sample -d 10 -o prof.html 1234\n"
    "  pystack-dump sample -m async -d 5 1234   # where tasks await\n"
    "  pystack-dump sample -r max -f collapsed -- python3 app.py\n"
    "  pystack-dump sample -o run.pydrec 1234   # record; then e.g.\n"
    "  pystack-dump report run.pydrec --from 60 --to 90 -o slice.html\n"
    "  pystack-dump sample --every 60 -o 'prof-%H%M%S.pb.gz' 1234\n"
    "  pystack-dump sample --push http://pyroscope:4040 --labels env=prod 1234\n";

void cli_format_help(void)
{
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
}

/* -m's rows: each mode's name and what it samples (modes.c). */
static void mode_help(void)
{
	for (unsigned m = 0; m < PYD_SAMPLE_MODES; m++) {
		const char *line = pyd_sample_modes[m].help;
		printf("%-22s%-5s ", m ? "" : "  -m, --mode MODE",
		       pyd_sample_modes[m].name);
		for (const char *nl; (nl = strchr(line, '\n')); line = nl + 1)
			printf("%.*s\n%28s", (int)(nl - line), line, "");
		printf("%s\n", line);
	}
}

static void usage(void)
{
	fputs(usage_head, stdout);
	mode_help();
	fputs(usage_mid, stdout);
	cli_format_help();
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
	struct push *push; /* --push */
};

static volatile sig_atomic_t stop_signal;
/* It was sent by a process (kill), not by the terminal, which sends
 * Ctrl-C's SIGINT to a launched program as well. */
static volatile sig_atomic_t stop_sent;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	stop_signal = sig;
	stop_sent = si->si_code == SI_USER || si->si_code == SI_QUEUE;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump sample: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump sample --help'.\n");
	return PYD_E_USAGE;
}

const struct pyd_prof_format *cli_format_for(const struct pyd_opts *o)
{
	if (o->format)
		return o->format;
	if (o->output)
		return pyd_prof_format_for_file(o->output);
	return pyd_prof_format_named(isatty(STDOUT_FILENO) ? "table"
	                                                   : "collapsed");
}

/* --every writes files of its own, one profile each (or pushes them). */
static int check_every(const struct pyd_opts *o)
{
	if (!o->output && !o->push)
		return bad_usage("%s", "--every needs -o: the files' names "
		                       "(strftime fields, e.g. prof-%H%M%S.json), "
		                       "or --push URL");
	if (o->format->stream)
		return bad_usage("-f %s is written as samples come: not with "
		                 "--every", o->format->name);
	if (o->samples || o->live)
		return bad_usage("%s", "--every samples until -d, Ctrl-C or "
		                       "the target's exit: not with -n or --live");
	return 0;
}

/* --push sends pprof, every --every seconds (default PUSH_EVERY_S);
 * push_open checks the URL, --app and --labels. */
static int check_push(struct sample_opts *o)
{
	struct pyd_opts *opt = &o->opt;
	const struct pyd_prof_format *pprof = pyd_prof_format_named("pprof");
	opt->format = opt->format || opt->output ? cli_format_for(opt) : pprof;
	if (opt->format != pprof)
		return bad_usage("--push sends pprof, not %s (from -f or -o's "
		                 "name): name -o's files *.pb.gz, or give -f "
		                 "pprof", opt->format->name);
	if (!opt->every)
		opt->every = PUSH_EVERY_S;
	int rc = check_every(opt);
	if (rc)
		return rc;
	char err[512];
	rc = push_open(&o->push, opt->push, opt->app, opt->labels, err,
	               sizeof err);
	if (rc == PYD_E_USAGE)
		return bad_usage("%s", err);
	if (rc == PYD_E_UNSUPPORTED)
		cli_say_about("pystack-dump sample", PYD_SAY_PUSH_UNSUPPORTED,
		              rc, NULL, err);
	else if (rc)
		fprintf(stderr, "pystack-dump sample: out of memory\n");
	return rc;
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
	if (o->opt.live && (o->command || o->opt.format || o->opt.output ||
	                    o->opt.push))
		return bad_usage("%s", "--live shows a PID's top view: not with "
		                       "-- PROGRAM, -f, -o or --push");
	if ((o->opt.app || o->opt.labels) && !o->opt.push)
		return bad_usage("%s", "--app and --labels name what --push "
		                       "sends: give --push URL");
	if (o->opt.push)
		return check_push(o);
	o->opt.format = cli_format_for(&o->opt);
	return o->opt.every ? check_every(&o->opt) : 0;
}

/* ---- the run ---- */

struct run {
	struct sample_opts *o;
	struct procset ps;
	struct pyd_profile *prof;
	/* a streamed format: written to out as samples come */
	struct pyd_stream *stream;
	FILE *out;
	int out_errno; /* why out failed, 0 if it did not */
	/* --every: when the current interval began and ends, its reads
	 * before it, the whole run's counts, the files written */
	int64_t interval_start, interval_end;
	uint64_t reads_before;
	struct pyd_prof_meta total;
	size_t written;
	char last_file[4096];
	char last_name[4096]; /* ... as strftime gave it */
	unsigned same_name;   /* intervals that got last_name so far */
	int failed; /* an exit status that stops sampling */
	bool tty;   /* the status line is shown */
	pid_t child; /* launched program, or 0 */
	int child_status;
	bool child_reaped;
	bool stopping; /* stop_launched ended it */
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

static uint64_t unix_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
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

/* Where source lines are read, as the dump reads them: through the
 * target's root (the held one: the target may be gone), in buf; the heat
 * map shows them. */
static const char *source_root(const struct run *r, char *buf, size_t size)
{
	buf[0] = 0;
	if (r->root_fd >= 0)
		snprintf(buf, size, "/proc/self/fd/%d", r->root_fd);
	return buf;
}

static bool child_gone(struct run *r)
{
	if (!r->child || r->child_reaped)
		return r->child_reaped;
	if (waitpid(r->child, &r->child_status, WNOHANG) == r->child)
		r->child_reaped = true;
	return r->child_reaped;
}

/* The launched program and every process it started, so that none is
 * left running (a shell's Python child, adopted by init, spun on). */
static void signal_launched(struct run *r, int sig)
{
	struct pyd_proc *fam;
	size_t n;
	if (!pyd_live_family(r->child, &fam, &n)) {
		for (size_t i = n; i-- > 1;)
			kill(fam[i].pid, sig);
		free(fam);
	}
	kill(r->child, sig);
}

static void stop_launched(struct run *r)
{
	if (child_gone(r))
		return;
	fprintf(stderr, "pystack-dump sample: stopping %s (pid %d) and what it "
	        "started.\n", r->o->command[0], r->child);
	r->stopping = true;
	signal_launched(r, SIGTERM);
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
static void status_line(struct run *r, const struct pyd_prof_meta *m,
                        int64_t now)
{
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
	struct run *r = ctx;
	return stop_signal != 0 || r->failed;
}

static void cut_interval(struct run *r, int64_t now);

/* After every round: the status line, a stream's records due, an
 * interval's end. */
static void on_round(void *ctx, const struct pyd_prof_meta *m)
{
	struct run *r = ctx;
	/* No look at the clock that nothing needs: it costs at max rate. */
	int64_t now = r->tty || r->interval_end ? now_ns() : 0;
	if (r->tty)
		status_line(r, m, now);
	if (r->stream && !pyd_stream_tick(r->stream))
		r->failed = PYD_E_WRITE;
	if (r->interval_end && now >= r->interval_end)
		cut_interval(r, now);
}

static enum pyd_err sample_round(void *ctx, int64_t now, unsigned *nstacks)
{
	struct run *r = ctx;
	return procset_round(&r->ps, now, nstacks);
}

static void sample_loop(struct run *r)
{
	bool tty = r->tty = !r->o->opt.quiet && isatty(STDERR_FILENO);
	struct pyd_sample_loop l = {
	    .rate = r->o->opt.rate,
	    .max_rounds = r->o->opt.samples,
	    .max_seconds = r->o->opt.duration,
	    .stop = stop_requested,
	    .tick = tty || r->stream || r->o->opt.every ? on_round : NULL,
	    .round = sample_round,
	    .ctx = r,
	};
	r->start = r->shown = r->interval_start = now_ns();
	if (r->o->opt.every)
		r->interval_end = r->start + (int64_t)(r->o->opt.every * 1e9);
	enum pyd_sample_end e = pyd_sample_loop(NULL, &l, &r->prof->meta);
	if (tty)
		fputs("\r\033[K", stderr);
	r->target_exited = e == PYD_END_EXITED;
	r->why = e == PYD_END_STOPPED && stop_signal != SIGINT
	             ? "terminated"
	             : pyd_sample_end_text(e);
}

int cli_write_profile(const char *prog, struct pyd_profile *prof,
                      const struct pyd_opts *o, const char *path,
                      const char *root)
{
	struct pyd_buf b = {0};
	if (pyd_profile_render(&b, prof, o, root)) {
		pyd_buf_free(&b);
		fprintf(stderr, "%s: out of memory\n", prog);
		return PYD_E_NOMEM;
	}
	int rc = cli_write_file(prog, path, "the profile", b.data, b.len);
	pyd_buf_free(&b);
	return rc;
}

/* The finished profile prof into path (NULL: stdout). */
static int output(struct run *r, struct pyd_profile *prof, const char *path)
{
	char root[64];
	return cli_write_profile("pystack-dump sample", prof, &r->o->opt, path,
	                         source_root(r, root, sizeof root));
}

/* What the loop does not count in a profile's meta, at its end (now). */
static void finish_meta(struct run *r, struct pyd_profile *prof, int64_t now)
{
	struct pyd_prof_meta *m = &prof->meta;
	uint64_t reads = procset_reads(&r->ps);
	m->reads = reads - r->reads_before;
	r->reads_before = reads;
	prof->by_process = r->o->opt.subprocesses;
	if (!m->python_version && prof->nprocesses)
		m->python_version = prof->processes[0].python_version;
	if (r->o->opt.every)
		m->duration_s = (double)(now - r->interval_start) / 1e9;
	m->interval_s = m->ticks ? m->duration_s / (double)m->ticks : 0;
}

/* Intervals that end in the same second get one name from strftime: the
 * later ones are told apart by -2, -3 ... before the name's first dot,
 * rather than replace the earlier file. */
static void unique_name(struct run *r)
{
	if (strcmp(r->last_file, r->last_name)) {
		snprintf(r->last_name, sizeof r->last_name, "%s", r->last_file);
		r->same_name = 1;
		return;
	}
	char *base = strrchr(r->last_file, '/'), tail[4096];
	char *dot = strchr(base ? base : r->last_file, '.');
	size_t at = dot ? (size_t)(dot - r->last_file) : strlen(r->last_file);
	snprintf(tail, sizeof tail, "%s", r->last_file + at);
	snprintf(r->last_file + at, sizeof r->last_file - at, "-%u%s",
	         ++r->same_name, tail);
}

/* --push: the interval's pprof into the queue; the rate is -r's, or for
 * -r max the one achieved. */
static int push_interval(struct run *r, struct pyd_profile *prof,
                         uint64_t end_us)
{
	struct pyd_buf b = {0};
	if (pyd_profile_render(&b, prof, &r->o->opt, NULL)) {
		pyd_buf_free(&b);
		fprintf(stderr, "pystack-dump sample: out of memory\n");
		return PYD_E_NOMEM;
	}
	const struct pyd_prof_meta *m = &prof->meta;
	double hz = r->o->opt.rate ? r->o->opt.rate
	            : m->duration_s > 0 ? (double)m->ticks / m->duration_s
	                                : 1;
	push_send(r->o->push, &b, m->start_unix_us, end_us,
	          hz < 1 ? 1u : (unsigned)(hz + 0.5));
	return 0;
}

/* --every: the interval's profile, pushed and/or named at its end
 * (end_us, Unix microseconds). */
static int write_interval(struct run *r, struct pyd_profile *prof, int64_t now,
                          uint64_t end_us)
{
	finish_meta(r, prof, now);
	struct pyd_prof_meta *t = &r->total, *m = &prof->meta;
	t->ticks += m->ticks;
	t->samples += m->samples;
	t->errors += m->errors;
	t->missed += m->missed;
	t->reads += m->reads;
	int rc = r->o->push ? push_interval(r, prof, end_us) : 0;
	if (rc || !r->o->opt.output)
		return rc;
	time_t wall = (time_t)(end_us / 1000000u);
	struct tm tm;
	if (!strftime(r->last_file, sizeof r->last_file, r->o->opt.output,
	              localtime_r(&wall, &tm))) {
		cli_say_about("pystack-dump sample", PYD_SAY_CANNOT_WRITE,
		              PYD_E_WRITE, r->o->opt.output,
		              "the name is empty or too long after strftime");
		return PYD_E_WRITE;
	}
	unique_name(r);
	rc = output(r, prof, r->last_file);
	r->written += !rc;
	return rc;
}

/* --every: the interval ends; the samplers go on into a fresh profile. */
static void cut_interval(struct run *r, int64_t now)
{
	struct pyd_profile *done = pyd_profile_split(r->prof);
	if (!done) {
		r->failed = PYD_E_NOMEM;
		return;
	}
	uint64_t wall = unix_us();
	r->failed = write_interval(r, done, now, wall);
	pyd_profile_free(done);
	r->prof->meta.start_unix_us = wall;
	r->interval_start = now;
	r->interval_end = now + (int64_t)(r->o->opt.every * 1e9);
}

/* --subprocesses: what each process gave, and who was left out. */
static void processes_summary(const struct run *r)
{
	const struct pyd_profile *p = r->prof;
	if (!p->nprocesses)
		fprintf(stderr, "pystack-dump sample: no process of the family "
		        "ran Python");
	else
		fprintf(stderr, "pystack-dump sample: %zu process%s:",
		        p->nprocesses, p->nprocesses == 1 ? "" : "es");
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
	for (size_t i = 0; pyd_profile_hides_idle(&r->o->opt) && i < r->prof->nthreads; i++)
		n += pyd_prof_thread_idle(&r->prof->threads[i]);
	if (n)
		fprintf(stderr,
		        "pystack-dump sample: %zu idle thread%s (never seen on "
		        "a CPU) left out of the table; --idle keeps %s.\n",
		        n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
}

/* What the errors counted are, and what they do to the profile: said
 * only when there are some. */
static void errors_summary(const struct pyd_prof_meta *m)
{
	if (m->errors)
		fputs("pystack-dump sample: an error is a round in which a "
		      "thread's stack could not be read consistently (the "
		      "running target changed it, or its thread list, during "
		      "the read): the stacks not read were dropped, not "
		      "recorded short, so many errors under-represent the "
		      "threads that were changing.\n",
		      stderr);
}

/* Past this share of missed ticks (percent) the summary says what they
 * do to the shares: on a machine under a usual load a few percent are. */
#define MISSED_SAID_PCT 10.0

/* A missed tick is time no round saw: the rounds taken stand for it
 * (interval_s spreads the duration over them), so whatever the target
 * did then moves every share by up to the share missed. */
static void missed_summary(const struct pyd_prof_meta *m)
{
	double all = (double)(m->ticks + m->missed);
	double pct = all > 0 ? 100.0 * (double)m->missed / all : 0;
	if (pct <= MISSED_SAID_PCT)
		return;
	fprintf(stderr,
	        "pystack-dump sample: %.0f%% of the ticks were missed: the "
	        "machine did not run the sampler in time for them (it was "
	        "loaded, or the rate is more than it keeps up with). The "
	        "rounds taken stand for that time too, so a share can be off "
	        "by up to %.0f points; a lower --rate or a less loaded machine "
	        "misses fewer.\n",
	        pct, pct);
}

/* Unix microseconds as ISO 8601 UTC to the millisecond: when a profile
 * was taken, to line it up with logs (a pstats or collapsed file cannot
 * say it). */
static void utc_ms(uint64_t us, char out[32])
{
	time_t secs = (time_t)(us / 1000000u);
	struct tm tm;
	size_t n = gmtime_r(&secs, &tm)
	               ? strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm)
	               : 0;
	snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(us % 1000000u / 1000u));
}

static void summary(const struct run *r, const struct pyd_prof_meta *m,
                    bool wrote)
{
	double rate = m->duration_s > 0 ? (double)m->ticks / m->duration_s : 0;
	char from[32];
	utc_ms(m->start_unix_us, from);
	fprintf(stderr,
	        "pystack-dump sample: %s after %.2f s (from %s). %llu samples "
	        "in %llu rounds (%.0f rounds/s), %llu errors (%.2f%%), %llu "
	        "missed ticks, %.2f reads per round.\n",
	        r->why, m->duration_s, from, (unsigned long long)m->samples,
	        (unsigned long long)m->ticks, rate,
	        (unsigned long long)m->errors,
	        m->ticks ? 100.0 * (double)m->errors / (double)m->ticks : 0.0,
	        (unsigned long long)m->missed,
	        m->ticks ? (double)m->reads / (double)m->ticks : 0.0);
	errors_summary(m);
	missed_summary(m);
	const struct pyd_sample_mode_row *mode = pyd_sample_mode(m->mode);
	if (mode->summary) {
		fprintf(stderr, "pystack-dump sample: ");
		fprintf(stderr, mode->summary,
		        (unsigned long long)m->cpu_samples,
		        (unsigned long long)m->await_samples);
		fprintf(stderr, ".\n");
	}
	if (m->gil_looks) /* PYD_READ_GIL_WAITERS */
		fprintf(stderr,
		        "pystack-dump sample: GIL contention: threads were "
		        "waiting for the GIL in %.1f%% of %llu looks (every "
		        "0.1 s), %.2f waiting on average, at most %llu.\n",
		        100.0 * (double)m->gil_contended / (double)m->gil_looks,
		        (unsigned long long)m->gil_looks,
		        (double)m->gil_waiters / (double)m->gil_looks,
		        (unsigned long long)m->gil_waiters_max);
	if (mode->none_found && !m->samples && m->ticks) {
		fprintf(stderr, "pystack-dump sample: ");
		fprintf(stderr, mode->none_found, m->pid);
		fprintf(stderr, ".\n");
	}
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
	if (r->o->opt.every && r->o->opt.output)
		fprintf(stderr, "pystack-dump sample: wrote %zu profiles (%s), "
		        "the last %s.\n", r->written, r->o->opt.format->name,
		        r->written ? r->last_file : "none");
	else if (r->o->opt.output && wrote)
		fprintf(stderr, "pystack-dump sample: wrote %s (%s).\n",
		        r->o->opt.output, r->o->opt.format->name);
}

static void fill_meta(struct run *r)
{
	struct pyd_prof_meta *m = &r->prof->meta;
	m->pid = r->o->pid;
	/* A root that is not Python (a shell, skipped) has no process yet:
	 * the first Python one's, once there is one (finish_meta). */
	m->python_version = r->prof->nprocesses
	                        ? r->prof->processes[0].python_version
	                        : NULL;
	m->mode = r->o->opt.mode;
	m->rate_hz = r->o->opt.rate;
	m->start_unix_us = r->total.start_unix_us = unix_us();
}

/* The stream's sink: each chunk reaches the file at once, so a run
 * killed leaves every chunk written before. */
static bool write_out(void *ctx, const void *data, size_t n)
{
	struct run *r = ctx;
	if (fwrite(data, 1, n, r->out) == n && fflush(r->out) == 0)
		return true;
	r->out_errno = errno;
	return false;
}

static int open_stream(struct run *r)
{
	const char *path = r->o->opt.output;
	r->out = path ? fopen(path, "wb") : stdout;
	if (!r->out)
		return cli_cannot_write("pystack-dump sample", path, NULL,
		                        errno);
	if (!pyd_stream_open(r->prof, r->o->opt.format, write_out, r,
	                     &r->stream))
		return 0;
	if (r->out != stdout)
		fclose(r->out);
	fprintf(stderr, "pystack-dump sample: out of memory\n");
	return PYD_E_NOMEM;
}

/* The stream's end; a reader that went away (a pipe to head) is no
 * error. */
static int close_stream(struct run *r)
{
	bool ok = pyd_stream_close(r->stream);
	r->stream = NULL;
	if (r->out != stdout && fclose(r->out) && ok) {
		ok = false;
		r->out_errno = errno;
	}
	if (ok)
		return 0;
	if (!r->out_errno) {
		fprintf(stderr, "pystack-dump sample: out of memory\n");
		return PYD_E_NOMEM;
	}
	return cli_cannot_write("pystack-dump sample", r->o->opt.output,
	                        "the samples", r->out_errno);
}

/* --every: the summary's counts are the whole run's. */
static struct pyd_prof_meta whole_run(const struct run *r, double duration)
{
	struct pyd_prof_meta m = r->prof->meta;
	const struct pyd_prof_meta *t = &r->total;
	m.ticks = t->ticks;
	m.samples = t->samples;
	m.errors = t->errors;
	m.missed = t->missed;
	m.reads = t->reads;
	m.duration_s = duration;
	m.start_unix_us = t->start_unix_us;
	return m;
}

/* --push's end: what is queued sent (for up to PUSH_FLUSH_S), what
 * became of the profiles said; the exit status. */
static int close_push(struct run *r)
{
	struct push *p = r->o->push;
	char url[1024];
	snprintf(url, sizeof url, "%s", push_shown_url(p));
	struct push_counts c = push_close(p);
	r->o->push = NULL;
	if (c.unsent) {
		struct pyd_explain e = {.prog = "pystack-dump sample",
		                        .shell = PYD_SHELL_CLI,
		                        .file = url,
		                        .count = c.unsent};
		cli_say(&e, PYD_SAY_PUSH_UNSENT, PYD_E_READ);
	}
	if (!r->o->opt.quiet)
		fprintf(stderr,
		        "pystack-dump sample: pushed %llu profiles to %s (%llu "
		        "sends retried, %llu dropped from the full queue, %llu "
		        "refused, %llu unsent at the end).\n",
		        c.sent, url, c.retried, c.dropped, c.rejected, c.unsent);
	return c.dropped || c.rejected || c.unsent ? PYD_E_READ : 0;
}

/* Can the output be written?  Asked before sampling, not found out at
 * the end of the run; with --every, of the first interval's name. */
static int check_output(const struct pyd_opts *o)
{
	char first[4096];
	const char *path = o->output;
	time_t now = time(NULL);
	struct tm tm;
	if (o->every && path &&
	    strftime(first, sizeof first, path, localtime_r(&now, &tm)))
		path = first;
	return cli_output_check("pystack-dump sample", path);
}

/* Sample, then write what is left to write. */
static int run(struct run *r)
{
	fill_meta(r);
	const struct pyd_opts *o = &r->o->opt;
	int rc = o->format->stream ? open_stream(r) : check_output(o);
	if (!rc && r->o->push)
		rc = push_start(r->o->push, r->prof->nprocesses
		                                ? r->prof->processes[0].cmdline
		                                : "");
	if (rc)
		return rc;
	sample_loop(r);
	int64_t now = now_ns();
	double whole = r->prof->meta.duration_s;
	if (r->stream) {
		/* what stopped the stream is close_stream's to say */
		finish_meta(r, r->prof, now);
		rc = close_stream(r);
	} else if (!o->every) {
		finish_meta(r, r->prof, now);
		rc = output(r, r->prof, o->output);
	} else if (!r->failed && r->prof->meta.ticks) {
		rc = write_interval(r, r->prof, now, unix_us());
	}
	if (!o->quiet && o->every) {
		struct pyd_prof_meta m = whole_run(r, whole);
		summary(r, &m, !rc);
	} else if (!o->quiet) {
		summary(r, &r->prof->meta, !rc);
	}
	int pushed = r->o->push ? close_push(r) : 0;
	rc = rc ? rc : o->every ? r->failed : 0;
	/* A family none of which ran Python (a wrapper whose children were
	 * all skipped) gave nothing: said in the summary. */
	if (!rc && o->subprocesses && !r->prof->nprocesses) {
		rc = PYD_E_NOTPYTHON;
		if (r->child)
			stop_launched(r);
	}
	return rc ? rc : pushed;
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_sigaction = on_signal,
	                       .sa_flags = SA_SIGINFO};
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
		/* Stopped by a kill the program did not get: passed on, to
		 * it and what it started. */
		if (stop_signal && stop_sent)
			signal_launched(r, stop_signal);
		if (!stop_signal && !r->target_exited && !r->stopping)
			fprintf(stderr,
			        "pystack-dump sample: waiting for "
			        "process %d to exit (Ctrl-C stops it).\n",
			        r->child);
		while (waitpid(r->child, &r->child_status, 0) < 0 &&
		       errno == EINTR)
			if (stop_signal)
				signal_launched(r, SIGINT);
	}
	return rc;
}

/* A launched program that could not be sampled is not left running. */
static int launch_error(struct run *r, enum pyd_err err, const char *detail)
{
	if (err == PYD_E_EXITED) {
		cli_say_about("pystack-dump sample", PYD_SAY_LAUNCH_EXITED, err,
		              r->o->command[0], detail);
		return err;
	}
	int rc = cli_report_error(err, &(struct target_spec){.pid = r->o->pid}, detail);
	stop_launched(r);
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
	if (!r.prof) {
		push_close(o.push);
		return PYD_E_NOMEM;
	}
	r.prof->gc = !o.opt.no_gc;
	char detail[512] = "";
	enum pyd_err err = o.command ? launch(&r, detail, sizeof detail)
	                             : attach(&r, detail, sizeof detail);
	if (err && o.command) {
		rc = launch_error(&r, err, detail);
	} else if (err == PYD_E_UNSUPPORTED && r.ps.mode_unsupported) {
		cli_say_about("pystack-dump sample", PYD_SAY_MODE_UNSUPPORTED,
		              err, NULL, detail);
		rc = err;
	} else if (err) {
		rc = cli_report_error(err, &(struct target_spec){.pid = o.pid}, detail);
	} else {
		rc = run(&r);
	}
	detach(&r);
	pyd_profile_free(r.prof);
	push_close(o.push);
	return finish_child(&r, rc);
}
