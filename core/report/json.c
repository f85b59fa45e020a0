#include "report.h"

#include <signal.h>
#include <stdlib.h>

void pyd_report_json_frame(struct pyd_buf *b, const struct pyd_frame *f,
			   bool kind)
{
	if (kind)
		PUT(b, "{\"kind\": \"python\", ");
	else
		PUT(b, "{");
	pyd_buf_put(b, "\"function\": ", 12);
	pyd_buf_json_str(b, f->function);
	pyd_buf_put(b, ", \"qualname\": ", 14);
	pyd_buf_json_str(b, f->qualname);
	pyd_buf_put(b, ", \"file\": ", 10);
	pyd_buf_json_str(b, f->file);
	PUT(b, ", \"line\": ");
	pyd_buf_i64(b, f->line);
	PUT(b, "}");
}

void pyd_report_json_vars(struct pyd_buf *b, const struct pyd_frame_vars *fv)
{
	b->len--; /* reopen the frame's object */
	for (int args = 1; args >= 0; args--) {
		pyd_buf_printf(b, ", \"%s\": ", args ? "arguments" : "locals");
		if (fv->unreadable) {
			pyd_buf_put(b, "null", 4);
			continue;
		}
		pyd_buf_put(b, "{", 1);
		bool first = true;
		for (size_t i = 0; i < fv->n; i++) {
			if (fv->v[i].argument != (args == 1))
				continue;
			if (!first)
				pyd_buf_put(b, ", ", 2);
			first = false;
			pyd_buf_json_str(b, fv->v[i].name);
			pyd_buf_put(b, ": ", 2);
			pyd_buf_json_str(b, fv->v[i].repr);
		}
		pyd_buf_put(b, "}", 1);
	}
	pyd_buf_put(b, "}", 1);
}

static void native_json(struct pyd_buf *b, const struct pyd_native_frame *f)
{
	pyd_buf_put(b, "{\"kind\": \"native\", \"function\": ", 31);
	pyd_buf_json_str(b, f->function);
	pyd_buf_put(b, ", \"library\": ", 13);
	pyd_buf_json_str(b, f->library);
	pyd_buf_printf(b, ", \"address\": %llu, \"file\": ",
		       (unsigned long long)f->pc);
	pyd_buf_json_str(b, f->file);
	if (f->file)
		pyd_buf_printf(b, ", \"line\": %d}", f->line);
	else
		pyd_buf_put(b, ", \"line\": null}", 15);
}

static void python_json(struct pyd_buf *b, const struct pyd_thread *t,
			size_t j, bool kind)
{
	pyd_report_json_frame(b, &t->frames[j], kind);
	if (t->vars && !b->failed)
		pyd_report_json_vars(b, &t->vars[j]);
}

/* With native frames: one merged stack, innermost first. */
static void merged_json(struct pyd_buf *b, const struct pyd_thread *t,
			bool keep_interp)
{
	struct pyd_merged *m = malloc((t->nframes + t->nnative + 1) * sizeof *m);
	if (!m) {
		b->failed = true;
		return;
	}
	size_t k = pyd_merge_stacks(t, t->native, t->nnative, keep_interp, m);
	for (size_t i = 0; i < k; i++) {
		if (i)
			pyd_buf_put(b, ", ", 2);
		if (m[i].native)
			native_json(b, &t->native[m[i].index]);
		else
			python_json(b, t, m[i].index, true);
	}
	free(m);
}

static void thread_json(struct pyd_buf *b, const struct pyd_thread *t,
			bool native, bool keep_interp)
{
	pyd_buf_printf(b, "{\"tid\": %lld, \"interpreter\": %lld, \"name\": ",
		       (long long)t->tid, (long long)t->interp_id);
	pyd_buf_json_str(b, t->name[0] ? t->name : NULL);
	pyd_buf_printf(b, ", \"holds_gil\": %s, \"waits_for_gil\": %s, "
			  "\"in_exception\": %s, \"state\": \"%s\", \"error\": ",
		       t->holds_gil ? "true" : "false",
		       t->waits_gil ? "true" : "false",
		       t->in_exception ? "true" : "false", pyd_run_state_name(t->run));
	pyd_buf_json_str(b, t->error ? pyd_strerror(t->error) : NULL);
	pyd_buf_printf(b, ", \"truncated\": %s",
		       t->truncated ? "true" : "false");
	if (t->recovered)
		pyd_buf_put(b, ", \"recovered\": true", 19);
	if (native) {
		pyd_buf_put(b, ", \"native_error\": ", 18);
		pyd_buf_json_str(b, t->native_error
					    ? pyd_strerror(t->native_error)
					    : NULL);
	}
	pyd_buf_put(b, ", \"frames\": [", 13);
	if (native) {
		merged_json(b, t, keep_interp);
	} else {
		for (size_t j = 0; j < t->nframes; j++) {
			if (j)
				pyd_buf_put(b, ", ", 2);
			python_json(b, t, j, false);
		}
	}
	pyd_buf_put(b, "]}", 2);
}

const char *pyd_core_signal_name(int sig)
{
	/* The signals whose default action dumps core (signal(7)). */
	static const struct {
		int sig;
		const char *name;
	} dumping[] = {
	    {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
	    {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
	    {SIGSEGV, "SIGSEGV"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
	    {SIGSYS, "SIGSYS"},
	};
	for (size_t i = 0; i < sizeof dumping / sizeof *dumping; i++)
		if (dumping[i].sig == sig)
			return dumping[i].name;
	return NULL;
}

/* ', "crash": {...}': what the records of a crash say (--coredump). */
static void crash_json(struct pyd_buf *b, const struct pyd_crash *c)
{
	pyd_buf_put(b, ", \"crash\": {\"exe\": ", 19);
	pyd_buf_json_str(b, c->exe && *c->exe ? c->exe : NULL);
	pyd_buf_printf(b, ", \"signal\": %d, \"signal_name\": ", c->signal);
	pyd_buf_json_str(b, pyd_core_signal_name(c->signal));
	pyd_buf_put(b, ", \"time\": ", 10);
	pyd_buf_json_str(b, c->time && *c->time ? c->time : NULL);
	pyd_buf_put(b, ", \"found_by\": ", 14);
	pyd_buf_json_str(b, c->found_by);
	pyd_buf_put(b, "}", 1);
}

void pyd_report_json_head(struct pyd_buf *b, const struct pyd_report_opts *o)
{
	pyd_buf_printf(b, "{\"pid\": %d, ", o->pid);
	if (o->cmdline) {
		pyd_buf_printf(b, "\"ppid\": %d, \"cmdline\": ", o->ppid);
		pyd_buf_json_str(b, o->cmdline);
		pyd_buf_put(b, ", ", 2);
	}
	pyd_buf_put(b, "\"source\": ", 10);
	pyd_buf_json_str(b, o->source_kind);
	pyd_buf_put(b, ", \"python_version\": ", 20);
	pyd_buf_json_str(b, o->python_version);
	pyd_buf_printf(b, ", \"free_threaded\": %s",
		       o->free_threaded ? "true" : "false");
	pyd_buf_put(b, ", \"binary\": ", 12);
	pyd_buf_json_str(b, o->binary);
	if (o->crash)
		crash_json(b, o->crash);
}

void pyd_report_json_corrupt(struct pyd_buf *b, const struct pyd_report_opts *o)
{
	if (!o->corrupt)
		return;
	pyd_buf_put(b, ", \"corrupt\": ", 13);
	pyd_buf_json_str(b, o->corrupt);
}

void pyd_report_json(struct pyd_buf *b, const struct pyd_dump *d,
		     const struct pyd_report_opts *o)
{
	pyd_report_json_head(b, o);
	pyd_buf_put(b, ", \"threads\": [", 14);
	for (size_t i = 0; i < d->nthreads; i++) {
		pyd_buf_put(b, i ? ",\n  " : "\n  ", i ? 4 : 3);
		thread_json(b, &d->threads[i], d->has_native, o->native_all);
	}
	pyd_buf_put(b, "\n]", 2);
	if (d->has_locals)
		pyd_buf_printf(b, ", \"locals_budget_spent\": %s",
			       d->locals_budget_spent ? "true" : "false");
	pyd_report_json_corrupt(b, o);
	pyd_buf_put(b, "}\n", 2);
}
