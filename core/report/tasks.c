/*
 * Reports of an asyncio task graph: tree, table and JSON.
 *
 * Every loop here is bounded by the graph: a task is printed in full once,
 * later mentions refer back to it, and a task met again on the path that
 * leads to it closes an await cycle and is not followed.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Append a string literal. */

const char *pyd_task_state_name(enum pyd_task_state st)
{
	switch (st) {
	case PYD_TASK_PENDING:
		return "pending";
	case PYD_TASK_DONE:
		return "done";
	case PYD_TASK_CANCELLED:
		return "cancelled";
	case PYD_TASK_UNKNOWN:
		break;
	}
	return "unknown";
}

static const char *frame_name(const struct pyd_frame *f)
{
	return f->qualname ? f->qualname : f->function;
}

static void header(struct pyd_buf *b, const struct pyd_task_graph *g,
		   const struct pyd_report_opts *o)
{
	pyd_report_text_head(b, o);
	if (!g->asyncio_loaded && g->other_loop)
		pyd_buf_printf(b, "No asyncio tasks: the process has not "
				  "imported asyncio. It runs %s, whose tasks "
				  "--tasks does not read: the thread dump "
				  "(without --tasks) shows the one running "
				  "now%s.\n",
			       g->other_loop,
			       !strcmp(g->other_loop, "gevent") ||
				       !strcmp(g->other_loop, "eventlet")
				   ? ", --greenlets every greenlet"
				   : "");
	else if (!g->asyncio_loaded)
		pyd_buf_printf(b, "No asyncio tasks: the process has not "
				  "imported asyncio.\n");
	else if (!g->ntasks)
		pyd_buf_printf(b, "No pending asyncio tasks.\n");
	if (g->error)
		pyd_buf_printf(b, "[task list incomplete: %s]\n",
			       pyd_strerror(g->error));
	if (g->truncated)
		pyd_buf_printf(b, "[more than %d tasks: the rest are left out]\n",
			       PYD_MAX_TASKS);
}

/* ---- tree ------------------------------------------------------------ */

#define BRANCH "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 " /* "├── " */
#define LAST "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 "   /* "└── " */
#define PIPE "\xe2\x94\x82   "                         /* "│   " */
#define SPACE "    "

struct tree {
	struct pyd_buf *b;
	const struct pyd_task_graph *g;
	struct pyd_buf prefix;
	uint8_t *mark; /* 1 on the current path, 2 printed */
};

struct level {
	size_t task;
	size_t next;   /* next of its awaits to print */
	size_t prefix; /* prefix length for its children */
};

static void put_prefix(struct tree *t, size_t len)
{
	if (len)
		pyd_buf_put(t->b, t->prefix.data, len);
}

static void set_prefix(struct tree *t, size_t len)
{
	t->prefix.len = len;
	if (t->prefix.data)
		t->prefix.data[len] = 0;
}

/* The task's line and its frames; returns the prefix length under its
 * innermost frame, where the tasks it awaits go. */
static size_t emit_task(struct tree *t, size_t task, bool last,
			int64_t parent_thread)
{
	const struct pyd_task *k = &t->g->tasks[task];
	put_prefix(t, t->prefix.len);
	pyd_buf_printf(t->b, "%s(T) %s", last ? LAST : BRANCH, k->name);
	if (k->thread && k->thread != parent_thread)
		pyd_buf_printf(t->b, " (thread %lld)", (long long)k->thread);
	if (k->running)
		pyd_buf_printf(t->b, " [running]");
	if (k->state != PYD_TASK_PENDING)
		pyd_buf_printf(t->b, " [%s]", pyd_task_state_name(k->state));
	if (k->error)
		pyd_buf_printf(t->b, " [stack incomplete: %s]",
			       pyd_strerror(k->error));
	pyd_buf_put(t->b, "\n", 1);
	pyd_buf_printf(&t->prefix, "%s", last ? SPACE : PIPE);
	for (size_t j = k->ncoro; j-- > 0;) {
		const struct pyd_frame *f = &k->coro_stack[j];
		put_prefix(t, t->prefix.len);
		pyd_buf_printf(t->b, LAST "%s %s:%d\n", frame_name(f), f->file,
			       f->line);
		pyd_buf_printf(&t->prefix, SPACE);
	}
	return t->prefix.len;
}

static void render(struct tree *t, size_t root, struct level *stack)
{
	size_t depth = 0;
	set_prefix(t, 0);
	t->mark[root] = 1;
	stack[depth++] = (struct level){root, 0, emit_task(t, root, true, 0)};
	while (depth) {
		struct level *top = &stack[depth - 1];
		const struct pyd_task *k = &t->g->tasks[top->task];
		if (top->next >= k->nawaits || t->b->failed || t->prefix.failed) {
			t->mark[top->task] = 2;
			depth--;
			continue;
		}
		bool last = ++top->next == k->nawaits;
		long child = pyd_task_find(t->g, k->awaits[top->next - 1]);
		set_prefix(t, top->prefix);
		if (child < 0)
			continue;
		const struct pyd_task *c = &t->g->tasks[child];
		if (t->mark[child]) {
			put_prefix(t, top->prefix);
			pyd_buf_printf(t->b, "%s(T) %s %s\n", last ? LAST : BRANCH,
				       c->name,
				       t->mark[child] == 1 ? "(await cycle)"
							   : "(shown above)");
			continue;
		}
		t->mark[child] = 1;
		size_t p = emit_task(t, (size_t)child, last, k->thread);
		stack[depth++] = (struct level){(size_t)child, 0, p};
	}
}

void pyd_report_tasks_tree(struct pyd_buf *b, const struct pyd_task_graph *g,
			   const struct pyd_report_opts *o)
{
	header(b, g, o);
	struct tree t = {.b = b, .g = g};
	t.mark = calloc(g->ntasks ? g->ntasks : 1, 1);
	struct level *stack = malloc((g->ntasks ? g->ntasks : 1) * sizeof *stack);
	if (!t.mark || !stack) {
		b->failed = true;
		goto out;
	}
	/* Roots are the tasks nobody awaits; then whatever only cycles
	 * reach. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < g->ntasks; i++)
			if (!t.mark[i] && (pass || !g->tasks[i].nawaited_by))
				render(&t, i, stack);
	if (g->ncycles) {
		pyd_buf_printf(b, "\nAwait cycles (each task awaits the next):\n");
		for (size_t i = 0; i < g->ncycles; i++) {
			const struct pyd_task_cycle *cy = &g->cycles[i];
			pyd_buf_printf(b, "  cycle:");
			for (size_t j = 0; j < cy->n; j++) {
				long k = pyd_task_find(g, cy->ids[j]);
				pyd_buf_printf(b, "%s%s", j ? " -> " : " ",
					       k >= 0 ? g->tasks[k].name : "?");
			}
			PUT(b, "\n");
		}
	}
out:
	free(stack);
	free(t.mark);
	pyd_buf_free(&t.prefix);
}

/* ---- table ----------------------------------------------------------- */

enum { COL_TID, COL_ID, COL_NAME, COL_STACK, COL_CHAIN, COL_AWNAME, COL_AWID,
       NCOLS };

static const char *const col_title[NCOLS] = {
	"tid", "task id", "task name", "coroutine stack", "awaiter chain",
	"awaiter name", "awaiter id",
};
/* `python -m asyncio ps` widths: a column is as wide as its widest
 * cell, but no wider than this (longer cells just overflow). */
static const size_t col_cap[NCOLS] = {10, 20, 20, 50, 50, 15, 15};

/* Characters (not bytes) of a UTF-8 string. */
static size_t width(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* "inner -> ... -> outer" of a task's coroutine stack */
static void stack_string(struct pyd_buf *out, const struct pyd_task *k)
{
	out->len = 0;
	PUT(out, "");
	for (size_t j = 0; j < k->ncoro; j++)
		pyd_buf_printf(out, "%s%s", j ? " -> " : "",
			       frame_name(&k->coro_stack[j]));
}

struct row {
	char *cell[NCOLS];
};

static char *dup_buf(const struct pyd_buf *b)
{
	return strdup(b->data ? b->data : "");
}

static void emit_row(struct pyd_buf *b, char *const *cell, const size_t *w)
{
	for (int c = 0; c < NCOLS; c++) {
		pyd_buf_printf(b, "%s", cell[c]);
		if (c + 1 == NCOLS)
			break;
		size_t n = width(cell[c]);
		for (size_t i = n; i < w[c] + 1; i++)
			PUT(b, " ");
		if (n > w[c]) /* overflowing cells keep one space */
			PUT(b, " ");
	}
	PUT(b, "\n");
}

void pyd_report_tasks_table(struct pyd_buf *b, const struct pyd_task_graph *g,
			    const struct pyd_report_opts *o)
{
	header(b, g, o);
	if (!g->ntasks)
		return;
	size_t nrows = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		nrows += g->tasks[i].nawaited_by ? g->tasks[i].nawaited_by : 1;
	struct row *rows = calloc(nrows, sizeof *rows);
	struct pyd_buf tmp = {0}, own = {0};
	if (!rows) {
		b->failed = true;
		goto out;
	}
	size_t r = 0;
	for (size_t i = 0; i < g->ntasks; i++) {
		const struct pyd_task *k = &g->tasks[i];
		stack_string(&own, k);
		for (size_t a = 0; a < (k->nawaited_by ? k->nawaited_by : 1); a++) {
			char **cell = rows[r++].cell;
			tmp.len = 0;
			pyd_buf_printf(&tmp, "%lld", (long long)k->thread);
			cell[COL_TID] = dup_buf(&tmp);
			tmp.len = 0;
			pyd_buf_printf(&tmp, "0x%llx", (unsigned long long)k->id);
			cell[COL_ID] = dup_buf(&tmp);
			cell[COL_NAME] = strdup(k->name);
			cell[COL_STACK] = dup_buf(&own);
			long w = k->nawaited_by ? pyd_task_find(g, k->awaited_by[a])
						: -1;
			if (w >= 0)
				stack_string(&tmp, &g->tasks[w]);
			cell[COL_CHAIN] = w >= 0 ? dup_buf(&tmp) : strdup("");
			cell[COL_AWNAME] = strdup(w >= 0 ? g->tasks[w].name : "");
			tmp.len = 0;
			pyd_buf_printf(&tmp, "0x%llx",
				       (unsigned long long)(w >= 0 ? g->tasks[w].id
								   : 0));
			cell[COL_AWID] = dup_buf(&tmp);
		}
	}
	size_t w[NCOLS];
	for (int c = 0; c < NCOLS; c++) {
		w[c] = width(col_title[c]);
		for (size_t i = 0; i < nrows; i++) {
			size_t n = rows[i].cell[c] ? width(rows[i].cell[c]) : 0;
			if (n > w[c])
				w[c] = n < col_cap[c] ? n : col_cap[c];
		}
	}
	for (size_t i = 0; i < nrows; i++)
		for (int c = 0; c < NCOLS; c++)
			if (!rows[i].cell[c]) {
				b->failed = true;
				goto out;
			}
	size_t total = 0;
	for (int c = 0; c < NCOLS; c++)
		total += w[c] + (c + 1 < NCOLS);
	PUT(b, "\n");
	emit_row(b, (char *const *)col_title, w);
	for (size_t i = 0; i < total; i++)
		PUT(b, "-");
	PUT(b, "\n");
	for (size_t i = 0; i < nrows; i++)
		emit_row(b, rows[i].cell, w);
	if (g->ncycles)
		pyd_buf_printf(b, "\n%zu await cycle(s); see --tasks (tree) or "
				  "--tasks --json.\n",
			       g->ncycles);
out:
	if (rows)
		for (size_t i = 0; i < nrows; i++)
			for (int c = 0; c < NCOLS; c++)
				free(rows[i].cell[c]);
	free(rows);
	pyd_buf_free(&tmp);
	pyd_buf_free(&own);
}

/* ---- JSON ------------------------------------------------------------ */

static void ids_json(struct pyd_buf *b, const uint64_t *ids, size_t n)
{
	PUT(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			PUT(b, ", ");
		pyd_buf_u64(b, ids[i]);
	}
	PUT(b, "]");
}

static void task_json(struct pyd_buf *b, const struct pyd_task *k)
{
	PUT(b, "{\"id\": ");
	pyd_buf_u64(b, k->id);
	PUT(b, ", \"name\": ");
	pyd_buf_json_str(b, k->name);
	PUT(b, ", \"state\": ");
	pyd_buf_json_str(b, pyd_task_state_name(k->state));
	PUT(b, ", \"thread\": ");
	if (k->thread)
		pyd_buf_i64(b, k->thread);
	else
		PUT(b, "null");
	if (k->running)
		PUT(b, ", \"running\": true, \"error\": ");
	else
		PUT(b, ", \"running\": false, \"error\": ");
	pyd_buf_json_str(b, k->error ? pyd_strerror(k->error) : NULL);
	PUT(b, ",\n   \"coroutine_stack\": [");
	for (size_t j = 0; j < k->ncoro; j++) {
		if (j)
			PUT(b, ", ");
		pyd_report_json_frame(b, &k->coro_stack[j], false);
	}
	PUT(b, "],\n   \"awaits\": ");
	ids_json(b, k->awaits, k->nawaits);
	PUT(b, ", \"awaited_by\": ");
	ids_json(b, k->awaited_by, k->nawaited_by);
	PUT(b, "}");
}

void pyd_report_tasks_json(struct pyd_buf *b, const struct pyd_task_graph *g,
			   const struct pyd_report_opts *o)
{
	pyd_report_json_head(b, o);
	pyd_buf_printf(b, ", \"asyncio_loaded\": %s, \"truncated\": %s, "
			  "\"error\": ",
		       g->asyncio_loaded ? "true" : "false",
		       g->truncated ? "true" : "false");
	pyd_buf_json_str(b, g->error ? pyd_strerror(g->error) : NULL);
	PUT(b, ", \"other_loop\": ");
	pyd_buf_json_str(b, g->other_loop);
	PUT(b, ",\n \"tasks\": [");
	for (size_t i = 0; i < g->ntasks; i++) {
		pyd_buf_put(b, i ? ",\n  " : "\n  ", i ? 4 : 3);
		task_json(b, &g->tasks[i]);
	}
	if (g->ntasks)
		PUT(b, "\n ");
	PUT(b, "],\n \"cycles\": [");
	for (size_t i = 0; i < g->ncycles; i++) {
		if (i)
			PUT(b, ", ");
		ids_json(b, g->cycles[i].ids, g->cycles[i].n);
	}
	PUT(b, "]");
	pyd_report_json_corrupt(b, o);
	PUT(b, "}\n");
}
