/*
 * One dump, for pystack-dump PID (dump.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../core/report/report.h"
#include "commands.h"
#include "dump.h"
#include "source.h"

bool pyd_dump_check(const struct target_spec *t, struct pyd_opts *o,
                    char *err, size_t errsz)
{
	const char *why = NULL;
	const struct pyd_repr_limits dflt = PYD_REPR_DEFAULTS;
	const struct pyd_repr_limits *r = &o->repr;
	bool file = t->core || t->snapshot;
	if (o->native_all)
		o->native = true;
	if ((t->exe || t->sysroot) && !t->core)
		why = "--exe and --sysroot go with --core";
	else if (o->locked && file)
		why = "--locked needs a live process";
	else if (o->table && !o->tasks)
		why = "--table goes with --tasks";
	else if (o->table && o->json)
		why = "give one of --table and --json";
	else if (o->native && (o->tasks || t->snapshot))
		why = "--native unwinds a live process or a core: not with "
		      "--tasks or --snapshot";
	else if (o->subprocesses && file)
		why = "--subprocesses reads a live process and its children: "
		      "give a PID";
	else if (o->subprocesses && o->save)
		why = "--save-snapshot records one process: not with "
		      "--subprocesses";
	else if (o->greenlets && o->tasks)
		why = "give one of --greenlets and --tasks";
	else if (o->locals && o->tasks)
		why = "--locals shows the thread stacks' variables: not with "
		      "--tasks";
	/* Field by field: memcmp would compare the structs' padding too. */
	else if (!o->locals &&
	         (r->string != dflt.string || r->items != dflt.items ||
	          r->depth != dflt.depth || r->digits != dflt.digits ||
	          r->attrs != dflt.attrs))
		why = "--locals-string, --locals-items and --locals-depth go "
		      "with --locals";
	if (why)
		snprintf(err, errsz, "%s", why);
	return !why;
}

/* One run: what it reads, what it decoded, where it says so. */
struct run {
	const struct pyd_dump_job *j;
	struct target t;
	struct pyd_runtime rt;
	struct pyd_session *sess;
	struct pyd_dump dump;
	struct pyd_task_graph graph;
	struct pyd_greenlet_set greenlets;
	enum pyd_err greenlets_err; /* why they were not listed */
	bool no_vars; /* --locals of a snapshot saved without them */
	struct pyd_buf *out, *msg;
};

static struct pyd_explain about(const struct run *r)
{
	return target_words(&r->j->spec, r->j->prog, "");
}

static void say(const struct run *r, const struct pyd_explain *e,
                enum pyd_say what, enum pyd_err err)
{
	pyd_explain(r->msg, e, what, err);
}

/* Test hook: hold the target paused this long, so a test can kill us
 * mid-pause and check the target survives. */
static void test_pause_hook(void)
{
	const char *ms = getenv("PYD_TEST_LOCKED_PAUSE_MS");
	if (!ms)
		return;
	long v = strtol(ms, NULL, 10);
	struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
	if (v > 0)
		nanosleep(&ts, NULL);
}

static enum pyd_err take_dump(struct run *r, bool *decoding, char *detail,
                              size_t detailsz)
{
	const struct pyd_opts *o = &r->j->opt;
	enum pyd_err err = target_runtime(&r->t, &r->rt, detail, detailsz);
	if (!err)
		err = pyd_session_open(r->t.src, &r->rt, &r->sess, detail,
		                       detailsz);
	if (err)
		return err;
	/* Native stacks are unwound from registers: a live process's
	 * threads must be stopped to give them. */
	bool locked = o->locked || (o->native && r->t.live);
	if (locked) {
		if ((err = pyd_live_pause(r->t.live, detail, detailsz)))
			return err;
		test_pause_hook();
	}
	*decoding = true;
	err = o->tasks ? pyd_dump_tasks(r->sess, &r->graph)
	               : pyd_dump_stacks(r->sess, &r->dump);
	if (o->greenlets && !err &&
	    (r->greenlets_err = pyd_dump_greenlets(r->sess, &r->greenlets)) ==
	        PYD_E_NOMEM)
		err = PYD_E_NOMEM;
	if (o->greenlets && !err &&
	    pyd_greenlets_waiting(r->sess, &r->greenlets) == PYD_E_NOMEM)
		err = PYD_E_NOMEM;
	/* Locals and native stacks of whatever was read: they change no
	 * exit status unless we ran out of memory.  A snapshot saved
	 * without variables has none to show, not unreadable ones. */
	const struct pyd_snapshot_meta *m =
	    r->t.snap ? pyd_snapshot_meta(r->t.snap) : NULL;
	r->no_vars = o->locals && m && m->holds_known &&
	             !(m->holds & PYD_SNAP_HOLDS_VARIABLES);
	if (o->locals && !r->no_vars && !o->tasks &&
	    (r->dump.nthreads || r->greenlets.n) &&
	    pyd_dump_locals(r->sess, &r->dump,
	                    o->greenlets ? &r->greenlets : NULL,
	                    &o->repr) == PYD_E_NOMEM &&
	    !err)
		err = PYD_E_NOMEM;
	if (o->native && !o->tasks &&
	    pyd_dump_native(r->sess, &r->dump, o->native_all) == PYD_E_NOMEM &&
	    !err)
		err = PYD_E_NOMEM;
	if (locked)
		pyd_live_resume(r->t.live);
	return err;
}

/* --tasks: why the task graph could not be read. */
static enum pyd_err report_tasks_error(const struct run *r, enum pyd_err err)
{
	struct pyd_explain e = about(r);
	e.version = pyd_session_version(r->sess);
	if (err == PYD_E_UNSUPPORTED)
		say(r, &e, PYD_SAY_TASKS_UNSUPPORTED, err);
	else if (err == PYD_E_READ && !r->rt.asyncio_debug_addr)
		say(r, &e, PYD_SAY_NO_ASYNCIO_OFFSETS, err);
	else
		say(r, &e, PYD_SAY_ERROR, err);
	return err;
}

/* "Process 1234", "Core file core.1234 (process 1234)", ... */
static void describe_origin(const struct run *r, char *out, size_t outsz)
{
	const struct target_spec *s = &r->j->spec;
	const char *file = s->core ? s->core : s->snapshot;
	const char *what = s->core ? "Core file" : "Snapshot";
	char cmd[4097]; /* escapes make a 1 KiB command line up to 4 KiB */
	if (!file && r->j->family) {
		pyd_one_line(r->j->cmdline, cmd, sizeof cmd);
		/* the command line next to the pid it is of, the parent's
		 * pid after it */
		snprintf(out, outsz, "Process %d (%s; parent %d)", r->t.pid,
		         cmd, r->j->ppid);
	} else if (!file)
		snprintf(out, outsz, "Process %d", r->t.pid);
	else {
		const char *packed =
		    r->t.core ? pyd_core_compression(r->t.core) : "";
		char how[32] = "";
		if (*packed)
			snprintf(how, sizeof how, ", %s-compressed", packed);
		const struct pyd_crash *c = s->crash;
		const char *sig = c ? pyd_core_signal_name(c->signal) : NULL;
		if (c && r->t.pid > 0)
			/* what the crash's records say, after the pid */
			snprintf(out, outsz,
			         "%s %s%s (process %d: %s, %s, %s, from %s)",
			         what, file, how, r->t.pid,
			         *c->exe ? c->exe : "?", sig ? sig : "?",
			         *c->time ? c->time : "?", c->found_by);
		else if (r->t.pid > 0)
			snprintf(out, outsz, "%s %s%s (process %d)", what,
			         file, how, r->t.pid);
		else
			snprintf(out, outsz, "%s %s%s", what, file, how);
	}
}

static struct pyd_report_opts report_opts(const struct run *r,
                                          const char *origin)
{
	return (struct pyd_report_opts){
	    .pid = r->t.pid,
	    .origin = origin,
	    .source_kind = r->t.kind,
	    .python_version = pyd_session_version(r->sess),
	    .binary = pyd_session_binary(r->sess),
	    .free_threaded = pyd_session_free_threaded(r->sess),
	    .ppid = r->j->ppid,
	    .cmdline = r->j->family ? r->j->cmdline : NULL,
	    .corrupt = pyd_session_corruption(r->sess),
	    .crash = r->j->spec.crash,
	};
}

static void print_tasks(const struct run *r)
{
	char origin[4200];
	describe_origin(r, origin, sizeof origin);
	struct pyd_report_opts ro = report_opts(r, origin);
	pyd_show_tasks(r->out, &r->graph, r->j->opt.json, r->j->opt.table,
	               &ro);
}

static void print_dump(const struct run *r)
{
	const struct pyd_opts *o = &r->j->opt;
	char origin[4200];
	describe_origin(r, origin, sizeof origin);
	struct pyd_report_opts ro = report_opts(r, origin);
	bool sources = !o->no_source && !o->json && !r->j->spec.snapshot;
	const char *other = r->t.core ? pyd_core_other_root(r->t.core) : NULL;
	/* This machine's files of the paths the frames name are not the
	 * process's: its lines would be silently wrong. */
	if (sources && other) {
		struct pyd_explain e = about(r);
		e.detail = other;
		say(r, &e, PYD_SAY_OTHER_ROOT, PYD_OK);
		sources = false;
	}
	struct source_cache *sc =
	    sources ? source_cache_new(r->t.source_root) : NULL;
	ro.source_line = sc ? source_cache_line : NULL;
	ro.source_ctx = sc;
	ro.native_all = o->native_all;
	if (o->greenlets && o->json)
		pyd_report_greenlets_json(r->out, &r->greenlets, &ro);
	else
		pyd_show_dump(r->out, &r->dump, o->json, &ro);
	if (o->greenlets && !o->json)
		pyd_report_greenlets_text(r->out, &r->greenlets, &ro);
	source_cache_free(sc);
}

static bool dump_truncated(const struct run *r)
{
	return r->t.core && pyd_core_missing_bytes(r->t.core) > 0;
}

/* A core shorter than its segments explains any failure to read it better
 * than the failure itself does. */
static enum pyd_err report_truncated(const struct run *r, bool partial)
{
	struct pyd_explain e = about(r);
	e.count = (unsigned long long)pyd_core_missing_bytes(r->t.core);
	e.partial = partial;
	say(r, &e, PYD_SAY_TRUNCATED, PYD_E_TRUNCATED);
	return PYD_E_TRUNCATED;
}

/* The damage hid even the interpreter: for --json, still an (empty)
 * document, so a pipeline gets JSON and the exit status tells why. */
static enum pyd_err report_truncated_early(const struct run *r)
{
	if (r->j->opt.json) {
		struct pyd_dump none = {0};
		struct pyd_report_opts ro = {
		    .pid = r->t.pid,
		    .source_kind = r->t.kind,
		    .python_version =
		        r->sess ? pyd_session_version(r->sess) : NULL,
		    .binary = r->sess ? pyd_session_binary(r->sess) : NULL,
		    .free_threaded =
		        r->sess && pyd_session_free_threaded(r->sess),
		};
		pyd_report_json(r->out, &none, &ro);
	}
	return report_truncated(r, false);
}

/*
 * After a report: what the reader must know about its completeness (bad
 * of its threads or tasks were not fully read), as the exit status and a
 * message.
 */
static enum pyd_err check_incomplete(const struct run *r, size_t bad,
                                     const char *what)
{
	if (dump_truncated(r))
		return report_truncated(r, bad > 0);
	if (!bad)
		return PYD_OK;
	struct pyd_explain e = about(r);
	e.count = bad;
	e.what = what;
	enum pyd_err err = r->t.live ? PYD_E_TORN : PYD_E_READ;
	say(r, &e, PYD_SAY_INCOMPLETE, err);
	return err;
}

/* --native: threads shown without their native stack are named (the exit
 * status stays: their Python stacks are whole). */
static void note_native(const struct run *r)
{
	size_t bad = 0;
	enum pyd_err why = PYD_OK;
	for (size_t i = 0; i < r->dump.nthreads; i++)
		if (r->dump.threads[i].native_error) {
			why = r->dump.threads[i].native_error;
			bad++;
		}
	if (!bad)
		return;
	struct pyd_explain e = about(r);
	e.count = bad;
	say(r, &e, PYD_SAY_NATIVE_UNREAD, why);
}

/* --greenlets: why they are not listed (the threads still are). */
static void note_greenlets(const struct run *r)
{
	struct pyd_explain e = about(r);
	e.version = pyd_session_version(r->sess);
	e.detail = r->greenlets.release[0] ? r->greenlets.release : "?";
	if (r->greenlets_err == PYD_E_UNSUPPORTED)
		say(r, &e,
		    pyd_session_free_threaded(r->sess)
		        ? PYD_SAY_GREENLETS_FREE_THREADED
		        : PYD_SAY_GREENLETS_UNSUPPORTED,
		    r->greenlets_err);
	else if (r->greenlets.unknown_layout)
		say(r, &e, PYD_SAY_GREENLET_LAYOUT, PYD_OK);
}

static enum pyd_err check_complete(const struct run *r)
{
	size_t bad = 0;
	for (size_t i = 0; i < r->dump.nthreads; i++)
		bad += r->dump.threads[i].error != PYD_OK;
	if (!bad) {
		for (size_t i = 0; i < r->greenlets.n; i++)
			bad += r->greenlets.g[i].error != PYD_OK;
		return check_incomplete(r, bad, "greenlet(s)");
	}
	return check_incomplete(r, bad, "thread(s)");
}

static enum pyd_err check_tasks_complete(const struct run *r)
{
	const struct pyd_task_graph *g = &r->graph;
	size_t bad = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		bad += g->tasks[i].error != PYD_OK;
	enum pyd_err partial = r->t.live ? PYD_E_TORN : PYD_E_READ;
	if (g->error && !dump_truncated(r)) {
		struct pyd_explain e = about(r);
		say(r, &e, PYD_SAY_TASKS_PARTIAL, partial);
	}
	enum pyd_err err = check_incomplete(r, bad, "task(s)");
	return err || !g->error ? err : partial;
}

/* Memory found corrupt (a list that loops back, the read budget spent):
 * what was read is shown; the exit status says the rest is missing. */
static enum pyd_err check_corrupt(const struct run *r)
{
	const char *why = pyd_session_corruption(r->sess);
	if (!why)
		return PYD_OK;
	struct pyd_explain e = about(r);
	e.detail = why;
	say(r, &e, PYD_SAY_CORRUPT, PYD_E_READ);
	return PYD_E_READ;
}

static enum pyd_err save_snapshot(const struct run *r)
{
	char detail[512] = "";
	const char *path = r->j->opt.save;
	pyd_recorder_set_holds(r->t.rec, r->j->opt.locals && !r->no_vars
	                                     ? PYD_SNAP_HOLDS_VARIABLES
	                                     : 0);
	enum pyd_err err = pyd_snapshot_write(r->t.rec, &r->rt, r->t.pid,
	                                      path, detail, sizeof detail);
	if (err) {
		struct pyd_explain e = {.prog = r->j->prog,
		                        .shell = PYD_SHELL_CLI,
		                        .file = path,
		                        .detail = detail};
		say(r, &e, PYD_SAY_SNAPSHOT_SAVE, err);
	}
	return err;
}

/* What was decoded (decoded: PYD_OK, or an error that is not fatal):
 * report it, save the snapshot, and say how complete it is. */
static enum pyd_err show(struct run *r, enum pyd_err decoded)
{
	const struct pyd_opts *o = &r->j->opt;
	if (o->tasks)
		print_tasks(r);
	else
		print_dump(r);
	enum pyd_err err = r->out->failed ? PYD_E_NOMEM : PYD_OK;
	if (!err && r->dump.has_native)
		note_native(r);
	if (!err && o->greenlets)
		note_greenlets(r);
	if (!err && r->no_vars) {
		struct pyd_explain e = about(r);
		say(r, &e, PYD_SAY_SNAPSHOT_NO_VARS, PYD_OK);
	}
	if (!err && o->save)
		err = save_snapshot(r);
	if (!err)
		err = o->tasks ? check_tasks_complete(r) : check_complete(r);
	if (!err)
		err = check_corrupt(r);
	return err ? err : decoded;
}

enum pyd_err pyd_dump_run(const struct pyd_dump_job *j, struct pyd_buf *out,
                          struct pyd_buf *msg, struct pyd_dump_outcome *how)
{
	struct run r = {.j = j, .out = out, .msg = msg};
	char detail[512] = "";
	*how = (struct pyd_dump_outcome){0};
	enum pyd_err err = target_open(&j->spec, &r.t, detail, sizeof detail);
	if (!err) {
		const char *w = r.t.core ? pyd_core_warnings(r.t.core) : "";
		pyd_buf_printf(msg, "%s", w);
		err = take_dump(&r, &how->decoding, detail, sizeof detail);
	}
	if (err && dump_truncated(&r)) {
		err = report_truncated_early(&r);
	} else if (pyd_err_fatal(err) && j->opt.tasks && how->decoding) {
		report_tasks_error(&r, err);
	} else if (pyd_err_fatal(err)) {
		struct pyd_explain e = target_words(&j->spec, j->prog, detail);
		say(&r, &e, PYD_SAY_ERROR, err);
	} else {
		err = show(&r, err);
		how->shown = true;
	}
	pyd_task_graph_free(&r.graph);
	pyd_greenlet_set_free(&r.greenlets);
	pyd_dump_free(&r.dump);
	pyd_session_close(r.sess);
	target_close(&r.t);
	return err;
}
