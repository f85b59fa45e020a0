/*
 * py-bt, py-tasks, py-sample: arguments, help, and running the first two
 * over any memory source (commands.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/pyd_profile.h"
#include "commands.h"
#include "explain.h"

static const char help_bt[] =
    "py-bt [all] [-n] [-j]: the Python stack of the selected thread.\n"
    "  all  every thread of every interpreter\n"
    "  -n   interleave the native frames the debugger knows: each group\n"
    "       of Python frames under the evaluation-loop frame running it\n"
    "  -j   JSON, as pystack-dump --json\n"
    "Works on live processes, core files and remote targets; reads memory\n"
    "through the debugger and never writes it.\n";

static const char help_tasks[] =
    "py-tasks [-t] [-j]: the asyncio task graph (CPython 3.7+).\n"
    "  (default) a tree: each task nobody awaits, its coroutine stack,\n"
    "            and under it the tasks it awaits\n"
    "  -t        a table, one row per task and awaiter\n"
    "  -j        JSON, as pystack-dump --tasks --json\n";

/* The list of formats comes from their table (pyd_prof_format_list). */
static const char help_sample_fmt[] =
    "py-sample N [--rate HZ|max] [--mode wall|cpu|gil|async]\n"
    "            [--format FMT] [-o FILE]: profile the live inferior.\n"
    "Resumes it, takes N samples (default rate 1000/s), stops it again\n"
    "and prints the table of functions by direct and cumulative samples;\n"
    "with -o FILE writes FMT (%s) there instead. Needs a live process.\n";

const char *pyd_cmd_help(const char *name)
{
	if (!strcmp(name, "py-bt"))
		return help_bt;
	if (!strcmp(name, "py-tasks"))
		return help_tasks;
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

/* Each command, its option bit (options.h) and its kind. */
static const struct {
	const char *name;
	unsigned in;
	enum pyd_cmd_kind kind;
} cmds[] = {
    {"py-bt", PYD_IN_BT, PYD_CMD_BT},
    {"py-tasks", PYD_IN_TASKS, PYD_CMD_TASKS},
    {"py-sample", PYD_IN_PYSAMPLE, PYD_CMD_SAMPLE},
};

bool pyd_cmd_parse(const char *name, const char *args, struct pyd_cmd *c,
                   char *err, size_t errsz)
{
	char *w[32];
	memset(c, 0, sizeof *c);
	size_t n = split(c, args, w, sizeof w / sizeof *w), i = 0;
	while (i < sizeof cmds / sizeof *cmds && strcmp(name, cmds[i].name))
		i++;
	if (i == sizeof cmds / sizeof *cmds) {
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
	return true;
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
	    .source_line = t->source_line,
	    .source_ctx = t->source_ctx,
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
	if (!c->opt.all && t->selected_tid &&
	    !select_thread(&d, t->selected_tid)) {
		pyd_buf_printf(out,
		               "py-bt: thread %lld runs no Python (py-bt "
		               "all shows every thread).\n",
		               (long long)t->selected_tid);
	} else if (c->opt.native && t->nnative && !c->opt.json) {
		pyd_report_text_native(out, &d, &ro, t->selected_tid, t->native,
		                       t->nnative);
	} else {
		pyd_show_dump(out, &d, c->opt.json, &ro);
	}
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

enum pyd_err pyd_cmd_run(const struct pyd_cmd *c,
                         const struct pyd_cmd_target *t, struct pyd_buf *out)
{
	const char *name = c->kind == PYD_CMD_BT ? "py-bt" : "py-tasks";
	struct pyd_runtime rt;
	struct pyd_session *s = NULL;
	char detail[256] = "";
	enum pyd_err err = PYD_OK;
	if (t->rt)
		rt = *t->rt;
	else
		err = pyd_runtime_find(t->src, t->src, &rt);
	if (!err)
		err = pyd_session_open(t->src, &rt, &s, detail, sizeof detail);
	if (err) {
		pyd_explain_debugger(out, name, err, detail);
		return err;
	}
	err = c->kind == PYD_CMD_BT ? run_bt(c, t, s, out)
	                            : run_tasks(c, t, s, out);
	pyd_session_close(s);
	return err;
}
