/*
 * py-bt, py-tasks, py-sample: arguments, help, and running the first two
 * over any memory source (commands.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/grow.h"
#include "../core/report/profiles.h"
#include "commands.h"
#include "explain.h"

static const char help_bt[] =
    "py-bt [all] [-n|-N] [-l] [-j]: the Python stack of the selected thread.\n"
    "  all  every thread of every interpreter\n"
    "  -n   interleave the native frames the debugger knows, each Python\n"
    "       frame in place of the evaluation loop running it: as\n"
    "       pystack-dump --native prints them\n"
    "  -N   the same keeping the interpreter's own frames, as --native-all\n"
    "       (also: --native-all)\n"
    "  -l   each frame's arguments and locals too (also: full, --locals)\n"
    "  -j   JSON, as pystack-dump --json\n"
    "Works on live processes, core files and remote targets; reads memory\n"
    "through the debugger and never writes it.\n";

static const char help_up[] =
    "py-up [N]: select the Python frame N levels outward (default 1).\n"
    "On the selected thread; the native frame running it (its evaluation\n"
    "loop) is selected too, so info registers and frame variable work\n"
    "there. Frames are numbered from the innermost, #0, as py-bt lists\n"
    "them bottom up. See also py-down, py-frame, py-list, py-locals and\n"
    "py-print.\n";

static const char help_down[] =
    "py-down [N]: select the Python frame N levels inward (default 1).\n"
    "On the selected thread; the native frame running it is selected\n"
    "too. See help py-up.\n";

static const char help_frame[] =
    "py-frame: show the selected Python frame.\n"
    "That is #0, the innermost, until py-up or py-down select another (a\n"
    "new thread starts over at #0); the native frame running it is\n"
    "selected too.\n";

static const char help_list[] =
    "py-list: the source around the selected Python frame's line.\n"
    "Five lines each side, an arrow at the current one; read from the\n"
    "target's files (/proc/PID/root for a live process in a container).\n";

static const char help_locals[] =
    "py-locals: the arguments and locals of the selected Python frame.\n"
    "As Python's repr() shows them (80 characters, 10 items, 2 levels of\n"
    "containers), read from memory without running code in the target.\n";

static const char help_print[] =
    "py-print NAME: one variable, as the selected Python frame sees it.\n"
    "Looked up in its locals, then its globals, then its builtins, and\n"
    "shown deeper than py-locals does: 1000 characters, 100 items, 5\n"
    "levels, and the attributes of plain instances.\n";

static const char help_tasks[] =
    "py-tasks [-t] [-j]: the asyncio task graph (CPython 3.7+).\n"
    "  (default) a tree: each task nobody awaits, its coroutine stack,\n"
    "            and under it the tasks it awaits\n"
    "  -t        a table, one row per task and awaiter\n"
    "  -j        JSON, as pystack-dump --tasks --json\n";

/* The list of formats comes from their table (pyd_prof_format_list). */
static const char help_sample_fmt[] =
    "py-sample N [--rate HZ|max] [--mode wall|cpu|gil|async|exception]\n"
    "            [--no-gc] [--format FMT] [-o FILE]: profile the live\n"
    "inferior (--no-gc: no <GC> frames on the collector's thread).\n"
    "Resumes it, takes N samples (default rate 1000/s), stops it again\n"
    "and prints the table of functions by direct and cumulative samples;\n"
    "with -o FILE writes FMT (%s) there instead. Needs a live process.\n";

/* Each command, its option bit (options.h), its kind and its help. */
static const struct {
	const char *name;
	unsigned in;
	enum pyd_cmd_kind kind;
	const char *help;
} cmds[] = {
    {"py-bt", PYD_IN_BT, PYD_CMD_BT, help_bt},
    {"py-tasks", PYD_IN_TASKS, PYD_CMD_TASKS, help_tasks},
    {"py-sample", PYD_IN_PYSAMPLE, PYD_CMD_SAMPLE, NULL},
    {"py-up", PYD_IN_MOVE, PYD_CMD_UP, help_up},
    {"py-down", PYD_IN_MOVE, PYD_CMD_DOWN, help_down},
    {"py-frame", 0, PYD_CMD_FRAME, help_frame},
    {"py-list", 0, PYD_CMD_LIST, help_list},
    {"py-locals", 0, PYD_CMD_LOCALS, help_locals},
    {"py-print", PYD_IN_PRINT, PYD_CMD_PRINT, help_print},
};

#define NCMDS (sizeof cmds / sizeof *cmds)

const char *pyd_cmd_nth(size_t i)
{
	return i < NCMDS ? cmds[i].name : NULL;
}

/* The row of the command named name; NCMDS if there is none. */
static size_t cmd_index(const char *name)
{
	size_t i = 0;
	while (i < NCMDS && strcmp(name, cmds[i].name))
		i++;
	return i;
}

size_t pyd_cmd_most_words(const char *name)
{
	size_t i = cmd_index(name);
	return i < NCMDS ? pyd_opts_most_words(cmds[i].in) : 0;
}

const char *pyd_cmd_help(const char *name)
{
	size_t i = cmd_index(name);
	if (i < NCMDS && cmds[i].help)
		return cmds[i].help;
	if (!strcmp(name, "py-sample")) {
		static char help[sizeof help_sample_fmt + 256];
		char names[256];
		pyd_prof_format_list(names, sizeof names);
		snprintf(help, sizeof help, help_sample_fmt, names);
		return help;
	}
	return NULL;
}

/* Split args into words in c->buf; returns the count. */
static size_t split(struct pyd_cmd *c, const char *args, char **words,
                    size_t max)
{
	size_t n = 0;
	snprintf(c->buf, sizeof c->buf, "%s", args ? args : "");
	for (char *p = strtok(c->buf, " \t\n"); p && n < max;
	     p = strtok(NULL, " \t\n"))
		words[n++] = p;
	return n;
}

bool pyd_cmd_parse(const char *name, const char *args, struct pyd_cmd *c,
                   char *err, size_t errsz)
{
	char *w[32];
	memset(c, 0, sizeof *c);
	size_t n = split(c, args, w, sizeof w / sizeof *w), i = cmd_index(name);
	if (i == NCMDS) {
		snprintf(err, errsz, "pystack-dump: no such command '%s'. "
		                     "Try: help pystack-dump", name);
		return false;
	}
	c->kind = cmds[i].kind;
	if (!pyd_opts_words(cmds[i].in, name, w, n, &c->opt, err, errsz))
		return false;
	/* N has no default: the inferior runs until N samples are taken,
	 * with the debugger's prompt waiting. */
	if (c->kind == PYD_CMD_SAMPLE && !c->opt.samples) {
		snprintf(err, errsz,
		         "py-sample: how many samples? e.g. "
		         "py-sample 1000. Try: help py-sample");
		return false;
	}
	if (c->kind == PYD_CMD_PRINT && !c->opt.name) {
		snprintf(err, errsz, "py-print: which variable? e.g. py-print "
		                     "request. Try: help py-print");
		return false;
	}
	if (!c->opt.levels)
		c->opt.levels = 1;
	return true;
}

bool pyd_cmd_wants_native(const struct pyd_cmd *c)
{
	/* The frame commands keep the native frame selected too (gdb
	 * forgets it when a command makes it unwind again). */
	return (c->kind == PYD_CMD_BT && (c->opt.native || c->opt.native_all)) ||
	       (c->kind != PYD_CMD_BT && c->kind != PYD_CMD_TASKS &&
	        c->kind != PYD_CMD_SAMPLE);
}

void pyd_show_dump(struct pyd_buf *out, const struct pyd_dump *d, bool json,
                   const struct pyd_report_opts *ro)
{
	if (json)
		pyd_report_json(out, d, ro);
	else
		pyd_report_text(out, d, ro);
}

void pyd_show_tasks(struct pyd_buf *out, const struct pyd_task_graph *g,
                    bool json, bool table, const struct pyd_report_opts *ro)
{
	if (json)
		pyd_report_tasks_json(out, g, ro);
	else if (table)
		pyd_report_tasks_table(out, g, ro);
	else
		pyd_report_tasks_tree(out, g, ro);
}

static struct pyd_report_opts report_opts(const struct pyd_cmd_target *t,
                                          const struct pyd_session *s)
{
	return (struct pyd_report_opts){
	    .pid = t->pid,
	    .origin = t->origin,
	    .source_kind = t->source_kind,
	    .python_version = pyd_session_version(s),
	    .binary = pyd_session_binary(s),
	    .free_threaded = pyd_session_free_threaded(s),
	    .source_line = t->source_line,
	    .source_ctx = t->source_ctx,
	    .corrupt = pyd_session_corruption(s),
	};
}

/* py-bt without all: keep the selected thread only. */
static bool select_thread(struct pyd_dump *d, int64_t tid)
{
	for (size_t i = 0; i < d->nthreads; i++) {
		if (d->threads[i].tid != tid)
			continue;
		struct pyd_thread keep = d->threads[i];
		d->threads[i] = d->threads[0];
		d->threads[0] = keep;
		for (size_t j = 1; j < d->nthreads; j++)
			free(d->threads[j].frames);
		d->nthreads = 1;
		return true;
	}
	return false;
}

/*
 * py-bt -n (-N): the selected thread's native frames as the debugger
 * unwound them, named as pystack-dump --native (--native-all) names its
 * own (so both print the same stack); a thread that runs no Python is
 * added with them.  all: the interpreter's frames are shown, with lines.
 */
static enum pyd_err with_native(struct pyd_session *s, struct pyd_dump *d,
                                const struct pyd_cmd_target *t, bool all)
{
	struct pyd_thread *th = NULL;
	for (size_t i = 0; i < d->nthreads; i++)
		if (d->threads[i].tid == t->selected_tid)
			th = &d->threads[i];
	if (!th) {
		/* The dump keeps no capacity: take it as full. */
		size_t cap = d->nthreads;
		if (!pyd_grow_from((void **)&d->threads, &cap, d->nthreads + 1,
		                   sizeof *d->threads, 1))
			return PYD_E_NOMEM;
		th = &d->threads[d->nthreads++];
		*th = (struct pyd_thread){.tid = t->selected_tid,
		                          .run = PYD_RUN_UNKNOWN};
	}
	d->has_native = true;
	return pyd_native_name(s, t->native, t->nnative, all, th);
}

static enum pyd_err run_bt(const struct pyd_cmd *c,
                           const struct pyd_cmd_target *t,
                           struct pyd_session *s, struct pyd_buf *out)
{
	struct pyd_dump d;
	enum pyd_err err = pyd_dump_stacks(s, &d);
	if (pyd_err_fatal(err)) {
		pyd_dump_free(&d);
		pyd_explain_debugger(out, "py-bt", err, "");
		return err;
	}
	struct pyd_report_opts ro = report_opts(t, s);
	const struct pyd_repr_limits lim = PYD_REPR_DEFAULTS;
	bool native = (c->opt.native || c->opt.native_all) && t->nnative &&
	              t->selected_tid;
	if (native && (err = with_native(s, &d, t, c->opt.native_all)))
		pyd_explain_debugger(out, "py-bt", err, "");
	else if (!c->opt.all && t->selected_tid &&
	         !select_thread(&d, t->selected_tid))
		pyd_buf_printf(out,
		               "py-bt: thread %lld runs no Python (py-bt "
		               "all shows every thread).\n",
		               (long long)t->selected_tid);
	else if (c->opt.locals && pyd_dump_locals(s, &d, NULL, &lim))
		pyd_explain_debugger(out, "py-bt", PYD_E_NOMEM, "");
	else {
		ro.native_all = native && c->opt.native_all;
		pyd_show_dump(out, &d, c->opt.json, &ro);
		if (ro.corrupt) {
			struct pyd_explain e = {.prog = "py-bt",
			                        .shell = PYD_SHELL_DEBUGGER,
			                        .detail = ro.corrupt};
			pyd_explain(out, &e, PYD_SAY_CORRUPT, PYD_E_READ);
		}
	}
	pyd_dump_free(&d);
	return err;
}

static const char *cmd_name(enum pyd_cmd_kind k)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (cmds[i].kind == k)
			return cmds[i].name;
	return "py-bt";
}

/* Lines of source py-list shows before and after the current one. */
#define LIST_CONTEXT 5

static void list_source(struct pyd_buf *out, const struct pyd_frame *f,
                        const struct pyd_cmd_target *t)
{
	const char *src = NULL;
	int first = f->line - LIST_CONTEXT > 1 ? f->line - LIST_CONTEXT : 1;
	if (f->line > 0 && t->source_line)
		src = t->source_line(t->source_ctx, f->file, f->line);
	if (!src) {
		pyd_buf_printf(out, "py-list: cannot read line %d of %s\n",
		               f->line, f->file);
		return;
	}
	for (int n = first; n <= f->line + LIST_CONTEXT; n++) {
		const char *l = t->source_line(t->source_ctx, f->file, n);
		if (!l)
			break;
		pyd_buf_printf(out, "%s%5d  %s\n", n == f->line ? "->" : "  ", n,
		               l);
	}
}

/* Move the selection of thread th by c's levels; false (with why in out)
 * if it cannot move at all. */
static bool move(const struct pyd_cmd *c, struct pyd_py_selection *sel,
                 const struct pyd_thread *th, struct pyd_buf *out)
{
	size_t last = th->nframes - 1, n = (size_t)c->opt.levels;
	if (c->kind == PYD_CMD_UP) {
		if (sel->level == last) {
			pyd_buf_printf(out, "py-up: #%zu is the outermost Python "
			                    "frame\n", last);
			return false;
		}
		sel->level = n > last - sel->level ? last : sel->level + n;
	} else if (c->kind == PYD_CMD_DOWN) {
		if (sel->level == 0) {
			pyd_buf_printf(out, "py-down: #0 is the innermost Python "
			                    "frame\n");
			return false;
		}
		sel->level = n > sel->level ? 0 : sel->level - n;
	}
	return true;
}

/* py-print's text is at most this long, cut with "...": PYD_REPR_DEEP
 * allows 5 levels of 100 items of 1000 characters, which a few nested
 * containers (or attributes of instances holding them) turn into
 * megabytes, more than a debugger console can show or anyone reads. */
#define PRINT_MAX_TEXT (64u << 10)

/* repr cut to PRINT_MAX_TEXT bytes, on a UTF-8 character boundary. */
static void cap_repr(char *repr)
{
	size_t len = strlen(repr);
	if (len <= PRINT_MAX_TEXT)
		return;
	len = PRINT_MAX_TEXT - 3;
	while (len && (repr[len] & 0xc0) == 0x80)
		len--;
	memcpy(repr + len, "...", 4);
}

static void print_var(const struct pyd_cmd *c, struct pyd_session *s,
                      const struct pyd_thread *th, size_t level,
                      struct pyd_buf *out)
{
	const struct pyd_repr_limits deep = PYD_REPR_DEEP;
	const struct pyd_frame *f = &th->frames[level];
	char *repr;
	const char *scope;
	if (pyd_frame_lookup(s, f, c->opt.name, &deep, &repr, &scope)) {
		pyd_explain_debugger(out, "py-print", PYD_E_NOMEM, "");
	} else if (!repr) {
		pyd_buf_printf(out, "py-print: '%s' is not a local, global or "
		                    "builtin name of #%zu (%s)\n",
		               c->opt.name, level, f->function);
	} else {
		cap_repr(repr);
		pyd_buf_printf(out, "%s %s = %s\n", scope, c->opt.name, repr);
	}
	free(repr);
}

/* py-up, py-down, py-frame, py-list, py-locals, py-print: on the selected
 * thread's stack, at the selected level. */
static enum pyd_err run_frame(const struct pyd_cmd *c,
                              const struct pyd_cmd_target *t,
                              struct pyd_session *s, struct pyd_buf *out)
{
	const char *name = cmd_name(c->kind);
	struct pyd_py_selection none = {0}, *sel = t->sel ? t->sel : &none;
	struct pyd_dump d;
	enum pyd_err err = pyd_dump_stacks(s, &d);
	sel->native = -1;
	if (pyd_err_fatal(err)) {
		pyd_dump_free(&d);
		pyd_explain_debugger(out, name, err, "");
		return err;
	}
	/* No thread selected (a shell that cannot tell): the main thread. */
	int64_t tid = t->selected_tid || !d.nthreads ? t->selected_tid
	                                             : d.threads[0].tid;
	if (!select_thread(&d, tid) || !d.threads[0].nframes) {
		pyd_buf_printf(out, "%s: thread %lld runs no Python (py-bt all "
		                    "shows every thread).\n",
		               name, (long long)tid);
		pyd_dump_free(&d);
		return err;
	}
	struct pyd_thread *th = &d.threads[0];
	if (sel->tid != tid || sel->level >= th->nframes)
		*sel = (struct pyd_py_selection){tid, 0, -1};
	struct pyd_report_opts ro = report_opts(t, s);
	const struct pyd_repr_limits lim = PYD_REPR_DEFAULTS;
	switch (c->kind) {
	case PYD_CMD_UP:
	case PYD_CMD_DOWN:
	case PYD_CMD_FRAME:
		if (move(c, sel, th, out))
			pyd_report_frame(out, th, sel->level, &ro);
		break;
	case PYD_CMD_LIST:
		list_source(out, &th->frames[sel->level], t);
		break;
	case PYD_CMD_LOCALS:
		if (pyd_dump_locals(s, &d, NULL, &lim)) {
			pyd_explain_debugger(out, name, PYD_E_NOMEM, "");
			break;
		}
		pyd_report_frame(out, th, sel->level, &ro);
		pyd_report_vars(out, &th->vars[sel->level]);
		break;
	default:
		print_var(c, s, th, sel->level, out);
		break;
	}
	sel->native = pyd_native_of(th, sel->level, t->native, t->nnative);
	pyd_dump_free(&d);
	return err;
}

static enum pyd_err run_tasks(const struct pyd_cmd *c,
                              const struct pyd_cmd_target *t,
                              struct pyd_session *s, struct pyd_buf *out)
{
	struct pyd_task_graph g;
	enum pyd_err err = pyd_dump_tasks(s, &g);
	if (err) {
		struct pyd_explain e = {.prog = "py-tasks",
		                        .shell = PYD_SHELL_DEBUGGER,
		                        .version = pyd_session_version(s)};
		pyd_explain(out, &e,
		            err == PYD_E_UNSUPPORTED ? PYD_SAY_TASKS_UNSUPPORTED
		                                     : PYD_SAY_ERROR,
		            err);
		return err;
	}
	struct pyd_report_opts ro = report_opts(t, s);
	pyd_show_tasks(out, &g, c->opt.json, c->opt.table, &ro);
	pyd_task_graph_free(&g);
	return PYD_OK;
}

enum pyd_err pyd_cmd_open(const char *name, const struct pyd_cmd_target *t,
                          struct pyd_session **s, struct pyd_buf *out)
{
	struct pyd_runtime rt;
	char detail[256] = "";
	enum pyd_err err = PYD_OK;
	*s = NULL;
	if (t->rt)
		rt = *t->rt;
	else
		err = pyd_runtime_find(t->src, t->src, &rt);
	if (!err)
		err = pyd_session_open(t->src, &rt, s, detail, sizeof detail);
	if (err)
		pyd_explain_debugger(out, name, err, detail);
	return err;
}

enum pyd_err pyd_cmd_run(const struct pyd_cmd *c,
                         const struct pyd_cmd_target *t, struct pyd_buf *out)
{
	struct pyd_session *s;
	enum pyd_err err = pyd_cmd_open(cmd_name(c->kind), t, &s, out);
	if (err)
		return err;
	err = c->kind == PYD_CMD_BT      ? run_bt(c, t, s, out)
	      : c->kind == PYD_CMD_TASKS ? run_tasks(c, t, s, out)
	                                 : run_frame(c, t, s, out);
	pyd_session_close(s);
	return err;
}
