/*
 * pystack-dump top: a live, full-screen view of where a process spends
 * its time, like top (and py-spy top).  The sampling is sample's: one
 * procset, one profile, pyd_sample_loop.  This file only watches the
 * profile from the loop's tick: once a second it keeps a copy of every
 * node's count in a ring of WINDOW_S + 1, so a function's samples in the
 * last WINDOW_S seconds are the nodes' counts now less the oldest copy.
 * Memory is bounded: the profile keeps at most TOP_MAX_NODES nodes (by
 * function, not line) and the ring as many counts per copy.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/profile/sampler.h"
#include "../core/report/profiles.h"
#include "../core/report/report.h"
#include "../frontend/options.h"
#include "cli.h"
#include "../frontend/procset.h"

#define WINDOW_S      5
#define RING          (WINDOW_S + 1)
#define TOP_MAX_NODES (1u << 16)
#define SEC           1000000000LL
#define KEYS_EVERY    (SEC / 50) /* how often keys are read */
#define IDLE_EVERY    (SEC / 5)  /* how often threads' states are */
#define HEAD_LINES    5          /* above the rows; the keys below */

static const char usage_text[] =
    "Usage: pystack-dump top [OPTIONS] PID\n"
    "       pystack-dump sample --live [OPTIONS] PID   (the same)\n"
    "\n"
    "A live, full-screen view of the Python functions process PID spends\n"
    "its time in, like top: sampled without stopping it (as pystack-dump\n"
    "sample does), refreshed every second, until q, Ctrl-C, SIGTERM or the\n"
    "target exits. Each function's own samples (it was the innermost\n"
    "frame) and total samples (anywhere on the stack, once however deep\n"
    "it recurses) are shown as a share of the last 5 seconds' samples\n"
    "(%Own, %Total) and as time over the whole run (OwnTime, TotalTime:\n"
    "samples times the sampling interval). The header gives the rate\n"
    "achieved, the samples, the failed rounds (errors) and the ticks\n"
    "missed; in gil mode, the share of looks (every 0.1 s) that found\n"
    "threads waiting for the GIL (GIL contended). Threads not on a CPU for\n"
    "the last 5 seconds are idle, and\n"
    "hidden until i. Needs a terminal (80x24 is enough); tmux is fine.\n"
    "\n"
    "Options:\n"
    "  -r, --rate HZ|max   samples per second (default 1000)\n"
    "  -m, --mode MODE     wall (default), cpu, gil, async or exception:\n"
    "                      as for pystack-dump sample --help\n"
    "      --no-gc         no <GC> frames (see sample --help)\n"
    "  -d, --duration SEC  stop after SEC seconds\n"
    "      --subprocesses  also every process descended from PID that\n"
    "                      runs CPython, as sample --subprocesses\n"
    "  -h, --help          show this help\n"
    "\n"
    "Keys:\n"
    "  1 2 3 4 5   sort by %Own, %Total, OwnTime, TotalTime, Function\n"
    "              (the sorted column's title is in [brackets])\n"
    "  p, space    pause the view (sampling goes on); again to resume\n"
    "  t           the next thread alone (threads cycle, then all)\n"
    "  a           all threads\n"
    "  i           show or hide idle threads\n"
    "  q           quit\n"
    "\n"
    "Exit status 0 whenever sampling ran (and a line on stderr says why it\n"
    "ended); 2 if standard input or output is not a terminal (use\n"
    "pystack-dump sample for a report); otherwise as for pystack-dump PID.\n";

enum column { OWN_PCT, TOTAL_PCT, OWN_TIME, TOTAL_TIME, NAME, NCOLUMNS };

static const char *const titles[NCOLUMNS] = {"%Own", "%Total", "OwnTime",
                                             "TotalTime", "Function"};
static const int widths[NCOLUMNS] = {8, 9, 10, 11, 0};

/* One function's line: its samples in the window and overall. */
struct row {
	uint32_t frame;
	uint64_t own_win, total_win, own_all, total_all;
};

/* The nodes' counts at one moment. */
struct snapshot {
	uint64_t *self;
	size_t n;
	int64_t at;
	uint64_t ticks;
};

/* What the screen shows: computed once a second (not while paused). */
struct view {
	struct row *rows;
	size_t nrows;
	uint64_t win_samples;
	double window_s, rate, interval_s, elapsed_s;
	uint64_t samples, errors, missed, ticks;
	size_t shown_threads, idle_hidden;
};

struct top {
	const struct pyd_opts *opt;
	int pid;
	struct procset ps;
	struct pyd_profile *prof;
	struct snapshot ring[RING];
	size_t ring_n;    /* copies kept, oldest first */
	int64_t *running; /* per profile thread: last seen on a CPU */
	size_t nrunning;
	uint64_t *counts; /* per node, scratch */
	bool *kept;       /* per node, scratch: in view */
	int64_t start, keys_at, idle_at;
	/* what the user chose */
	enum column sort;
	bool paused, show_idle, quit;
	int64_t thread; /* the tid shown alone, or -1 for all */
	struct view v;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static int top_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump top: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump top --help'.\n");
	return PYD_E_USAGE;
}

/* ---- the counts ---- */

static void snapshot_take(struct top *t, struct snapshot *s, int64_t now,
                          uint64_t ticks)
{
	const struct pyd_profile *p = t->prof;
	uint64_t *self = realloc(s->self, (p->nnodes + 1) * sizeof *self);
	if (!self)
		return; /* the old copy stays: a longer window, not a crash */
	for (size_t i = 0; i < p->nnodes; i++)
		self[i] = p->nodes[i].self;
	*s = (struct snapshot){self, p->nnodes, now, ticks};
}

/* Once a second: the oldest copy makes way for the newest. */
static void ring_push(struct top *t, int64_t now, uint64_t ticks)
{
	if (t->ring_n == RING) {
		struct snapshot old = t->ring[0];
		memmove(t->ring, t->ring + 1, (RING - 1) * sizeof *t->ring);
		t->ring[RING - 1] = old;
		t->ring_n--;
	}
	snapshot_take(t, &t->ring[t->ring_n++], now, ticks);
}

static bool idle(const struct top *t, size_t thread, int64_t now)
{
	return thread >= t->nrunning ||
	       now - t->running[thread] > WINDOW_S * SEC;
}

/* Threads the view counts: the one chosen, or all but the idle ones
 * unless they are shown. */
static bool in_view(const struct top *t, size_t thread, int64_t now)
{
	if (t->thread >= 0)
		return t->prof->threads[thread].tid == t->thread;
	return t->show_idle || !idle(t, thread, now);
}

/* Every few hundred ms: which threads are on a CPU (idle ones are not
 * seen there for WINDOW_S). */
static void note_running(struct top *t, int64_t now)
{
	const struct pyd_profile *p = t->prof;
	if (p->nthreads > t->nrunning) {
		int64_t *r = realloc(t->running, p->nthreads * sizeof *r);
		if (!r)
			return;
		for (size_t i = t->nrunning; i < p->nthreads; i++)
			r[i] = INT64_MIN / 2;
		t->running = r;
		t->nrunning = p->nthreads;
	}
	for (size_t i = 0; i < p->nthreads; i++)
		if (procset_thread_running(&t->ps, p->threads[i].process,
		                           p->threads[i].tid))
			t->running[i] = now;
}

/*
 * Per node, the samples since base (NULL: since the start) of the
 * threads in view into t->counts; their sum.  A child comes after its
 * parent, so a node is in view if its parent is (its thread's node, a
 * child of the root, if that thread is).
 */
static uint64_t count_nodes(struct top *t, const struct snapshot *base,
                            int64_t now)
{
	const struct pyd_profile *p = t->prof;
	uint64_t *c = t->counts, sum = 0;
	memset(t->kept, 0, p->nnodes * sizeof *t->kept);
	for (size_t i = 0; i < p->nthreads; i++)
		t->kept[p->threads[i].node] = in_view(t, i, now);
	c[0] = 0;
	for (size_t i = 1; i < p->nnodes; i++) {
		const struct pyd_prof_node *n = &p->nodes[i];
		uint64_t before = base && i < base->n ? base->self[i] : 0;
		if (n->parent)
			t->kept[i] = t->kept[n->parent];
		c[i] = t->kept[i] ? n->self - before : 0;
		sum += c[i];
	}
	return sum;
}

/* The rows of the functions in view: their counts in the window and
 * overall (pyd_prof_functions gives both in the same order). */
static bool count_rows(struct top *t, int64_t now)
{
	struct pyd_prof_func *win, *all;
	t->v.win_samples = count_nodes(t, t->ring_n ? &t->ring[0] : NULL, now);
	size_t n = pyd_prof_functions(t->prof, t->counts, &win);
	count_nodes(t, NULL, now);
	size_t m = pyd_prof_functions(t->prof, t->counts, &all);
	struct row *rows = n == m && n != SIZE_MAX
	                       ? realloc(t->v.rows, (n + 1) * sizeof *rows)
	                       : NULL;
	if (rows) {
		t->v.rows = rows;
		t->v.nrows = 0;
		for (size_t i = 0; i < n; i++)
			if (all[i].cum)
				rows[t->v.nrows++] = (struct row){
				    all[i].frame, win[i].self, win[i].cum,
				    all[i].self, all[i].cum};
	}
	free(win);
	free(all);
	return rows != NULL;
}

/* What the screen shows, as of now. */
static void compute(struct top *t, const struct pyd_prof_meta *m, int64_t now)
{
	size_t n = t->prof->nnodes + 1;
	uint64_t *c = realloc(t->counts, n * sizeof *c);
	if (c)
		t->counts = c;
	bool *kept = c ? realloc(t->kept, n * sizeof *kept) : NULL;
	if (!kept)
		return;
	t->kept = kept;
	pyd_profile_finish(t->prof);
	if (!count_rows(t, now))
		return;
	struct view *v = &t->v;
	const struct snapshot *old = t->ring_n ? &t->ring[0] : NULL;
	v->window_s = old ? (double)(now - old->at) / 1e9 : 0;
	v->rate = old && now > old->at
	              ? (double)(m->ticks - old->ticks) / v->window_s
	              : 0;
	v->elapsed_s = (double)(now - t->start) / 1e9;
	v->interval_s = m->ticks ? v->elapsed_s / (double)m->ticks : 0;
	v->samples = m->samples;
	v->errors = m->errors;
	v->missed = m->missed;
	v->ticks = m->ticks;
	v->shown_threads = v->idle_hidden = 0;
	for (size_t i = 0; i < t->prof->nthreads; i++) {
		v->shown_threads += in_view(t, i, now);
		v->idle_hidden +=
		    t->thread < 0 && !t->show_idle && idle(t, i, now);
	}
}

/* ---- the screen ---- */

static uint64_t sort_key(const struct row *r, enum column c)
{
	switch (c) {
	case OWN_PCT:
		return r->own_win;
	case TOTAL_PCT:
		return r->total_win;
	case OWN_TIME:
		return r->own_all;
	default:
		return r->total_all;
	}
}

static enum column sorting; /* qsort's comparison has no context */
static const struct pyd_profile *sorting_prof;

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (sorting == NAME) {
		const struct pyd_prof_frame *f =
		    &sorting_prof->frames[x->frame];
		const struct pyd_prof_frame *g =
		    &sorting_prof->frames[y->frame];
		int d = strcmp(f->qualname ? f->qualname : f->function,
		               g->qualname ? g->qualname : g->function);
		return d ? d : (x->frame > y->frame) - (x->frame < y->frame);
	}
	uint64_t kx = sort_key(x, sorting), ky = sort_key(y, sorting);
	if (kx != ky)
		return kx < ky ? 1 : -1;
	return (y->total_all > x->total_all) - (y->total_all < x->total_all);
}

/* "spend_hot (sample_split.py)": the file's name alone fits 80 columns. */
static const char *label(const struct pyd_prof_frame *f, char *buf, size_t size)
{
	if (f->kind != PYD_PF_PYTHON)
		return pyd_prof_frame_label(f, buf, size);
	const char *base = strrchr(f->file, '/');
	snprintf(buf, size, "%s (%s)", f->qualname ? f->qualname : f->function,
	         base ? base + 1 : f->file);
	return buf;
}

static void put_time(char *buf, size_t size, double s)
{
	if (s < 100)
		snprintf(buf, size, "%.2fs", s);
	else if (s < 6000)
		snprintf(buf, size, "%.1fm", s / 60);
	else
		snprintf(buf, size, "%.1fh", s / 3600);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A line at y, cut at the screen's width. */
static void line(int y, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(int y, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	mvaddnstr(y, 0, buf, COLS);
}

static const char *thread_text(const struct top *t, char *buf, size_t size)
{
	const struct view *v = &t->v;
	for (size_t i = 0; t->thread >= 0 && i < t->prof->nthreads; i++)
		if (t->prof->threads[i].tid == t->thread) {
			snprintf(buf, size, "thread %lld (%s)",
			         (long long)t->thread,
			         t->prof->threads[i].name[0]
			             ? t->prof->threads[i].name
			             : "no name");
			return buf;
		}
	if (t->show_idle)
		snprintf(buf, size, "all threads: %zu shown, idle ones too",
		         v->shown_threads);
	else
		snprintf(buf, size,
		         "all threads: %zu shown, %zu idle hidden "
		         "(i shows)",
		         v->shown_threads, v->idle_hidden);
	return buf;
}

static void draw_header(const struct top *t)
{
	const struct view *v = &t->v;
	const struct pyd_profile *p = t->prof;
	char rate[32], threads[160];
	if (t->opt->rate > 0)
		snprintf(rate, sizeof rate, "%.0f Hz", t->opt->rate);
	else
		snprintf(rate, sizeof rate, "max rate");
	size_t more = procset_sampling(&t->ps);
	line(0, "pystack-dump top: pid %d%s, Python %s, %s mode, %s%s", t->pid,
	     more > 1 ? " and children" : "",
	     p->nprocesses ? p->processes[0].python_version : "?",
	     pyd_sample_mode_name(t->opt->mode), rate,
	     t->paused ? "  [PAUSED]" : "");
	const struct pyd_prof_meta *m = &p->meta;
	char gil[48] = "";
	if (m->gil_looks) /* gil mode: how often others waited for it */
		snprintf(gil, sizeof gil, ", GIL contended %.0f%%",
		         pct(m->gil_contended, m->gil_looks));
	line(1,
	     "Rate %.0f/s, %llu samples in %.0f s, %llu errors (%.1f%%), "
	     "%llu missed%s",
	     v->rate, (unsigned long long)v->samples, v->elapsed_s,
	     (unsigned long long)v->errors, pct(v->errors, v->ticks),
	     (unsigned long long)v->missed, gil);
	line(2, "Window %.0f s: %llu samples of %s", v->window_s,
	     (unsigned long long)v->win_samples,
	     thread_text(t, threads, sizeof threads));
}

static void draw_titles(const struct top *t)
{
	char buf[160] = "", title[32];
	size_t len = 0;
	for (int c = 0; c < NCOLUMNS; c++) {
		snprintf(title, sizeof title,
		         t->sort == (enum column)c ? "[%s]" : "%s", titles[c]);
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%*s%s",
		                        c == NAME ? 2 : widths[c],
		                        c == NAME ? "" : title,
		                        c == NAME ? title : "");
	}
	attron(A_REVERSE);
	mvhline(HEAD_LINES - 1, 0, ' ', COLS);
	line(HEAD_LINES - 1, "%s", buf);
	attroff(A_REVERSE);
}

static void draw_row(const struct top *t, int y, const struct row *r)
{
	const struct view *v = &t->v;
	char own[16], total[16], name[1024];
	put_time(own, sizeof own, (double)r->own_all * v->interval_s);
	put_time(total, sizeof total, (double)r->total_all * v->interval_s);
	line(y, "%7.1f%%%8.1f%%%10s%11s  %s", pct(r->own_win, v->win_samples),
	     pct(r->total_win, v->win_samples), own, total,
	     label(&t->prof->frames[r->frame], name, sizeof name));
}

static void draw(struct top *t)
{
	sorting = t->sort;
	sorting_prof = t->prof;
	if (t->v.nrows) /* qsort's array may not be NULL, even empty */
		qsort(t->v.rows, t->v.nrows, sizeof *t->v.rows, cmp_rows);
	erase();
	draw_header(t);
	draw_titles(t);
	int y = HEAD_LINES;
	for (size_t i = 0; i < t->v.nrows && y < LINES - 1; i++)
		draw_row(t, y++, &t->v.rows[i]);
	attron(A_REVERSE);
	line(LINES - 1, "1-5 sort  p pause  t thread  a all  i idle  q quit");
	attroff(A_REVERSE);
	refresh();
}

/* ---- keys ---- */

/* t: the next thread in view after the one shown, then all again. */
static void next_thread(struct top *t, int64_t now)
{
	const struct pyd_profile *p = t->prof;
	size_t i = 0;
	if (t->thread >= 0)
		while (i < p->nthreads && p->threads[i++].tid != t->thread)
			;
	for (; i < p->nthreads; i++)
		if ((t->show_idle || !idle(t, i, now)) &&
		    p->threads[i].tid > 0) {
			t->thread = p->threads[i].tid;
			return;
		}
	t->thread = -1;
}

/* One key: whether the view must be counted again. */
static bool key(struct top *t, int k, int64_t now)
{
	switch (k) {
	case 'q':
	case 'Q':
		t->quit = true;
		return false;
	case 'p':
	case ' ':
		t->paused = !t->paused;
		return !t->paused;
	case 't':
		next_thread(t, now);
		return true;
	case 'a':
		t->thread = -1;
		return true;
	case 'i':
		t->show_idle = !t->show_idle;
		return true;
	default:
		if (k >= '1' && k < '1' + NCOLUMNS)
			t->sort = (enum column)(k - '1');
		return false;
	}
}

/* ---- the run ---- */

static void tick(void *ctx, const struct pyd_prof_meta *m)
{
	struct top *t = ctx;
	int64_t now = now_ns();
	if (now - t->keys_at < KEYS_EVERY)
		return;
	t->keys_at = now;
	if (now - t->idle_at >= IDLE_EVERY) {
		t->idle_at = now;
		note_running(t, now);
	}
	bool recount = false, redraw = false;
	int k;
	while ((k = getch()) != ERR) {
		recount |= key(t, k, now);
		redraw = true;
	}
	const struct snapshot *last = &t->ring[t->ring_n - 1];
	if (now - last->at >= SEC) {
		ring_push(t, now, m->ticks);
		recount |= !t->paused;
	}
	if (recount)
		compute(t, m, now);
	if (recount || redraw)
		draw(t);
}

static bool stop_requested(void *ctx)
{
	const struct top *t = ctx;
	return t->quit || stop_signal;
}

static void catch_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Full screen on the terminal; false (and said why) if it is none. */
static bool screen_open(void)
{
	SCREEN *s = newterm(NULL, stdout, stdin);
	if (!s) {
		fprintf(stderr,
		        "pystack-dump top: cannot use the terminal '%s' (set "
		        "TERM to one terminfo knows, e.g. xterm)\n",
		        getenv("TERM") ? getenv("TERM") : "");
		return false;
	}
	cbreak(); /* keys as they come, Ctrl-C still a signal */
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	return true;
}

static const char *end_text(enum pyd_sample_end e, const struct top *t)
{
	if (e == PYD_END_STOPPED && t->quit)
		return "quit";
	if (e == PYD_END_STOPPED && stop_signal != SIGINT)
		return "terminated";
	if (e == PYD_END_EXITED)
		return "the target exited";
	return pyd_sample_end_text(e);
}

static enum pyd_err sample_round(void *ctx, int64_t now, unsigned *nstacks)
{
	struct top *t = ctx;
	return procset_round(&t->ps, now, nstacks);
}

/* Sample and show until an end; the line that says which. */
static int run(struct top *t)
{
	struct pyd_sample_loop l = {
	    .rate = t->opt->rate,
	    .max_seconds = t->opt->duration,
	    .stop = stop_requested,
	    .tick = tick,
	    .round = sample_round,
	    .ctx = t,
	};
	struct pyd_prof_meta *m = &t->prof->meta;
	t->start = t->keys_at = t->idle_at = now_ns();
	ring_push(t, t->start, 0);
	compute(t, m, t->start);
	draw(t);
	enum pyd_sample_end e = pyd_sample_loop(NULL, &l, m);
	endwin();
	fprintf(stderr,
	        "pystack-dump top: %s after %.1f s (pid %d, %llu samples, "
	        "%llu errors, %llu missed).\n",
	        end_text(e, t), m->duration_s, t->pid,
	        (unsigned long long)m->samples, (unsigned long long)m->errors,
	        (unsigned long long)m->missed);
	return e == PYD_END_NOMEM ? PYD_E_NOMEM : 0;
}

static void top_free(struct top *t)
{
	for (size_t i = 0; i < RING; i++)
		free(t->ring[i].self);
	free(t->running);
	free(t->counts);
	free(t->kept);
	free(t->v.rows);
	procset_close(&t->ps);
	pyd_profile_free(t->prof);
}

/* Keys come from stdin, the screen goes to stdout: both a terminal. */
static bool on_terminal(void)
{
	if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
		return true;
	fprintf(stderr,
	        "pystack-dump top: %s is not a terminal: top is a "
	        "full-screen view (for a report, use pystack-dump "
	        "sample)\nTry 'pystack-dump top --help'.\n",
	        isatty(STDIN_FILENO) ? "standard output" : "standard input");
	return false;
}

int top_run(int pid, const struct pyd_opts *opt)
{
	if (!on_terminal())
		return PYD_E_USAGE;
	struct top t = {.opt = opt, .pid = pid, .thread = -1};
	t.prof = pyd_profile_new(false, TOP_MAX_NODES);
	if (t.prof)
		t.prof->gc = !opt->no_gc;
	if (!t.prof)
		return PYD_E_NOMEM;
	catch_signals();
	char detail[512] = "";
	enum pyd_err err =
	    procset_open(&t.ps, pid, t.prof, opt->mode, opt->subprocesses,
	                 detail, sizeof detail);
	int rc;
	if (err == PYD_E_UNSUPPORTED && t.ps.mode_unsupported) {
		struct pyd_explain e = {.prog = "pystack-dump top",
		                        .shell = PYD_SHELL_CLI,
		                        .detail = detail};
		cli_say(&e, PYD_SAY_MODE_UNSUPPORTED, err);
		rc = err;
	} else if (err) {
		rc = cli_report_error(err, &(struct target_spec){.pid = pid},
		                      detail);
	} else {
		rc = screen_open() ? run(&t) : PYD_E_USAGE;
	}
	top_free(&t);
	return rc;
}

int top_main(int argc, char **argv)
{
	struct pyd_opts opt;
	char err[512];
	int pid, rc;
	opterr = 0; /* our message only */
	if (!pyd_opts_getopt(argc, argv, PYD_IN_TOP, &opt, err, sizeof err))
		return top_usage_error("%s", err);
	if (opt.help) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (optind + 1 != argc)
		return top_usage_error("%s", optind >= argc
		                                 ? "give a PID"
		                                 : "expected exactly one PID");
	if ((rc = cli_parse_pid(argv[optind], &pid)))
		return rc;
	return top_run(pid, &opt);
}
