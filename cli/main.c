/*
 * pystack-dump: print the Python stacks of a running CPython process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/pyd.h"
#include "../core/report/report.h"
#include "cli.h"
#include "../frontend/commands.h"
#include "../frontend/source.h"
#include "target.h"

#ifndef PYD_VERSION
#define PYD_VERSION "dev"
#endif

static const char usage_text[] =
	"Usage: pystack-dump [OPTIONS] PID\n"
	"       pystack-dump --tasks [--table|--json] [OPTIONS] PID\n"
	"       pystack-dump sample [OPTIONS] PID   (sampling profiler: see\n"
	"                                          pystack-dump sample --help)\n"
	"       pystack-dump top [OPTIONS] PID      (live view, like top: see\n"
	"                                          pystack-dump top --help)\n"
	"       pystack-dump diff [OPTIONS] BASE NEW  (compare two profiles:\n"
	"                                          pystack-dump diff --help)\n"
	"       pystack-dump report [OPTIONS] FILE  (a recording, sample -f raw,\n"
	"                                          as a profile: see\n"
	"                                          pystack-dump report --help)\n"
	"       pystack-dump [OPTIONS] --core CORE [--exe EXE] [--sysroot DIR]\n"
	"       pystack-dump [OPTIONS] --snapshot FILE\n"
	"\n"
	"Print the Python stack of every thread of the CPython process PID,\n"
	"without stopping it and without any code in the target; or of the\n"
	"process a core file or a snapshot file captured.\n"
	"\n"
	"Sources:\n"
	"      --core CORE  read an ELF core file (from a crash, or gcore).\n"
	"                   Pages the core left out are read from the mapped\n"
	"                   files; for 3.13+ no binary is needed at all\n"
	"      --exe EXE    the core's executable, if not where the core says\n"
	"      --sysroot DIR  look for the core's libraries under DIR (a core\n"
	"                   copied off another machine)\n"
	"      --snapshot FILE  decode a snapshot saved by --save-snapshot\n"
	"      --save-snapshot FILE  also save exactly the memory this dump\n"
	"                   read (a few KB, no core needed) to FILE, to decode\n"
	"                   anywhere later with --snapshot\n"
	"\n"
	"Options:\n"
	"  -j, --json       print JSON instead of text (schema below)\n"
	"  -l, --locked     pause every thread of the target while reading\n"
	"                   (ptrace), for a perfectly consistent snapshot; the\n"
	"                   target resumes even if pystack-dump is killed\n"
	"      --no-source  do not print source lines under each frame\n"
	"      --native     merge each thread's native (C) stack with its\n"
	"                   Python one: the frames of C extensions and libc\n"
	"                   between Python frames, the innermost native ones\n"
	"                   (e.g. futex_wait) on top, threads that run no\n"
	"                   Python too. Unwound with elfutils from a core's\n"
	"                   registers, or a live process's: implies --locked\n"
	"      --native-all the same, keeping the interpreter's own frames\n"
	"                   (_PyEval_EvalFrameDefault ...) too\n"
	"  -L, --locals     also print each frame's arguments and local\n"
	"                   variables (cells and free variables included), as\n"
	"                   Python's repr() shows them, read from memory: no\n"
	"                   code runs in the target. Other objects show as\n"
	"                   <TYPE object at 0xADDR>, memory that cannot be read\n"
	"                   as <unreadable at 0xADDR>\n"
	"      --locals-string N  characters of a str or bytes shown (80)\n"
	"      --locals-items N   items shown per container (10)\n"
	"      --locals-depth N   levels of containers shown (2: [1, [2, [...]]]);\n"
	"                   past a limit a value ends in \"...\", an int of\n"
	"                   more than 60 digits shows its first 20 and its\n"
	"                   length. The locals of one dump cost at most\n"
	"                   1,000,000 reads of 256 MiB and 64 MiB of text;\n"
	"                   values past that show as <not read: budget spent>\n"
	"      --subprocesses  also every process descended from PID that\n"
	"                   runs CPython (multiprocessing workers, pre-fork\n"
	"                   servers' workers, subprocess children), each\n"
	"                   headed by its pid, parent and command line; the\n"
	"                   others are listed as skipped. With --json:\n"
	"                   {\"processes\": [each process's document, with\n"
	"                   \"ppid\" and \"cmdline\", or {\"pid\", \"ppid\",\n"
	"                   \"cmdline\", \"skipped\": why}]}\n"
	"      --tasks      print the asyncio task graph instead of the thread\n"
	"                   stacks (CPython 3.7+): each task that nobody\n"
	"                   awaits, its coroutine stack (outermost first), and\n"
	"                   under it the tasks it awaits; await cycles are\n"
	"                   reported. With --json: docs/tasks-json.md\n"
	"      --table      with --tasks: one row per task and awaiter, like\n"
	"                   python -m asyncio ps\n"
	"  -h, --help       show this help and exit\n"
	"  -V, --version    show the version and exit\n"
	"      --debugger-setup  print the lines for ~/.gdbinit and ~/.lldbinit\n"
	"                   that load the gdb and lldb plugins (py-bt,\n"
	"                   py-tasks, py-sample ...) installed with this\n"
	"                   pystack-dump, found from where it runs (exit 1 if\n"
	"                   it is not in an installed layout), and exit\n"
	"\n"
	"Text output follows Python tracebacks: most recent call last. Each\n"
	"thread header gives the OS thread id, its name, whether it holds the\n"
	"GIL and whether it is running or idle.\n"
	"\n"
	"JSON output:\n"
	"  {\"pid\": int, \"python_version\": \"3.12.1\", \"binary\": str,\n"
	"   \"threads\": [{\"tid\": int, \"interpreter\": int, \"name\": str|null,\n"
	"                \"holds_gil\": bool, \"state\": \"running\"|\"idle\"|\"unknown\",\n"
	"                \"error\": str|null, \"truncated\": bool,\n"
	"                \"frames\": [{\"function\": str, \"qualname\": str|null,\n"
	"                            \"file\": str, \"line\": int}]}]}\n"
	"  frames[0] is the innermost (currently executing) frame; qualname is\n"
	"  null before Python 3.11; \"truncated\" is true for a stack deeper\n"
	"  than 1,000,000 frames (frames holds its innermost 1,000,000). With\n"
	"  --locals each frame also has \"arguments\": {name: repr} and\n"
	"  \"locals\": {name: repr} (code-object order; null if the frame's\n"
	"  variables could not be read), and the document\n"
	"  \"locals_budget_spent\": bool. With --native every frame\n"
	"  has \"kind\": \"python\" or \"native\"; native frames are\n"
	"  {\"kind\", \"function\": str|null, \"library\": str|null, \"address\":\n"
	"  int, \"file\": str|null, \"line\": int|null}, and each thread has\n"
	"  \"native_error\": str|null. A thread whose outer frames were read\n"
	"  back from its data stack (a core without its C stack) has\n"
	"  \"recovered\": true. Where the interpreter's memory is corrupt (a\n"
	"  list that loops back), the document (and --tasks') has \"corrupt\":\n"
	"  str saying where, holds what was read before it, and the exit\n"
	"  status is 9.\n"
	"\n"
	"Supported: CPython 3.6 to 3.15 on Linux x86-64, release and debug\n"
	"builds, including processes in containers and chroots.\n"
	"\n"
	"Permissions: reading another process needs the right to ptrace it:\n"
	"run as root, or give pystack-dump CAP_SYS_PTRACE, or (same user only)\n"
	"set kernel.yama.ptrace_scope to 0.\n"
	"\n"
	"Exit status:\n"
	"  0 success             8 a stack kept changing; printed what was read\n"
	"  2 bad usage           9 memory not readable as expected\n"
	"  3 no such process    10 out of memory\n"
	"  4 permission denied  11 not an ELF core file\n"
	"  5 not a Python process 12 core of another architecture\n"
	"  6 unsupported Python  13 core truncated; printed what was read\n"
	"  7 process exited during the read  14 bad or unsupported snapshot file\n"
	"                       15 --exe does not match the core\n"
	"                       16 bad or unsupported profile or recording\n"
	"                          file (diff, report)\n";

struct options {
	struct target_spec spec; /* from opt's core, exe, ... and the PID */
	struct pyd_opts opt;
	/* --subprocesses: the process being read is one of a family */
	bool family;
	bool child; /* a descendant: skipped, not an error, if not Python */
	int ppid;
	char cmdline[1024];
};

/* Exactly one source: a PID, --core or --snapshot. */
static int check_sources(int argc, char **argv, struct options *o)
{
	struct target_spec *t = &o->spec;
	int files = !!t->core + !!t->snapshot, rest = argc - optind;
	if (files > 1 || (files && rest > 0))
		return cli_usage_error("%s", "give one of PID, --core or --snapshot");
	if (!files && rest != 1)
		return cli_usage_error("%s", rest ? "expected exactly one PID"
					      : "missing PID (or --core/--snapshot)");
	if ((t->exe || t->sysroot) && !t->core)
		return cli_usage_error("%s", "--exe and --sysroot go with --core");
	if (o->opt.locked && files)
		return cli_usage_error("%s", "--locked needs a live process");
	if (o->opt.table && !o->opt.tasks)
		return cli_usage_error("%s", "--table goes with --tasks");
	if (o->opt.table && o->opt.json)
		return cli_usage_error("%s", "give one of --table and --json");
	if (o->opt.native_all)
		o->opt.native = true;
	if (o->opt.native && (o->opt.tasks || t->snapshot))
		return cli_usage_error("%s", "--native unwinds a live process or "
					     "a core: not with --tasks or "
					     "--snapshot");
	if (o->opt.subprocesses && (o->spec.core || o->spec.snapshot))
		return cli_usage_error("%s", "--subprocesses reads a live "
					     "process and its children: give a "
					     "PID");
	if (o->opt.subprocesses && o->opt.save)
		return cli_usage_error("%s", "--save-snapshot records one "
					     "process: not with --subprocesses");
	if (o->opt.locals && o->opt.tasks)
		return cli_usage_error("%s", "--locals shows the thread stacks' "
					     "variables: not with --tasks");
	const struct pyd_repr_limits dflt = PYD_REPR_DEFAULTS;
	const struct pyd_repr_limits *r = &o->opt.repr;
	/* Field by field: memcmp would compare the structs' padding too. */
	if (!o->opt.locals &&
	    (r->string != dflt.string || r->items != dflt.items ||
	     r->depth != dflt.depth || r->digits != dflt.digits ||
	     r->attrs != dflt.attrs))
		return cli_usage_error("%s", "--locals-string, --locals-items "
					     "and --locals-depth go with --locals");
	return files ? 0 : cli_parse_pid(argv[optind], &t->pid);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	struct pyd_opts *p = &o->opt;
	char err[512];
	opterr = 0; /* our message only (sample's lets getopt's go first) */
	if (!pyd_opts_getopt(argc, argv, PYD_IN_DUMP, p, err, sizeof err))
		return cli_usage_error("%s", err);
	if (p->help) {
		fputs(usage_text, stdout);
		exit(0);
	}
	if (p->version) {
		printf("pystack-dump %s\n", PYD_VERSION);
		exit(0);
	}
	if (p->debugger_setup)
		exit(cli_debugger_setup());
	o->spec = (struct target_spec){.core = p->core, .exe = p->exe,
				       .sysroot = p->sysroot,
				       .snapshot = p->snapshot,
				       .record = p->save != NULL};
	return check_sources(argc, argv, o);
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

static enum pyd_err take_dump(struct target *t, const struct options *o,
			      struct pyd_runtime *rt, struct pyd_session **sess,
			      struct pyd_dump *dump, struct pyd_task_graph *graph,
			      bool *decoding, char *detail, size_t detailsz)
{
	enum pyd_err err = target_runtime(t, rt, detail, detailsz);
	if (!err)
		err = pyd_session_open(t->src, rt, sess, detail, detailsz);
	if (err)
		return err;
	/* Native stacks are unwound from registers: a live process's
	 * threads must be stopped to give them. */
	bool locked = o->opt.locked || (o->opt.native && t->live);
	if (locked) {
		if ((err = pyd_live_pause(t->live)))
			return err;
		test_pause_hook();
	}
	*decoding = true;
	err = o->opt.tasks ? pyd_dump_tasks(*sess, graph)
			   : pyd_dump_stacks(*sess, dump);
	/* Locals and native stacks of whatever was read: they change no
	 * exit status unless we ran out of memory. */
	if (o->opt.locals && !o->opt.tasks && dump->nthreads &&
	    pyd_dump_locals(*sess, dump, &o->opt.repr) == PYD_E_NOMEM && !err)
		err = PYD_E_NOMEM;
	if (o->opt.native && !o->opt.tasks &&
	    pyd_dump_native(*sess, dump, o->opt.native_all) == PYD_E_NOMEM &&
	    !err)
		err = PYD_E_NOMEM;
	if (locked)
		pyd_live_resume(t->live);
	return err;
}

/* --tasks: why the task graph could not be read. */
static int report_tasks_error(enum pyd_err err, const struct options *o,
			      const struct pyd_runtime *rt,
			      struct pyd_session *s)
{
	struct pyd_explain e = cli_about(&o->spec);
	e.version = pyd_session_version(s);
	if (err == PYD_E_UNSUPPORTED)
		cli_say(&e, PYD_SAY_TASKS_UNSUPPORTED, err);
	else if (err == PYD_E_READ && !rt->asyncio_debug_addr)
		cli_say(&e, PYD_SAY_NO_ASYNCIO_OFFSETS, err);
	else
		cli_say(&e, PYD_SAY_ERROR, err);
	return err;
}

/* "Process 1234", "Core file core.1234 (process 1234)", ... */
static void describe_origin(const struct options *o, const struct target *t,
			    char *out, size_t outsz)
{
	const char *file = o->spec.core ? o->spec.core : o->spec.snapshot;
	const char *what = o->spec.core ? "Core file" : "Snapshot";
	if (!file && o->family)
		snprintf(out, outsz, "Process %d (parent %d: %s)", t->pid,
			 o->ppid, o->cmdline);
	else if (!file)
		snprintf(out, outsz, "Process %d", t->pid);
	else if (t->pid > 0)
		snprintf(out, outsz, "%s %s (process %d)", what, file, t->pid);
	else
		snprintf(out, outsz, "%s %s", what, file);
}

static struct pyd_report_opts report_opts(const struct options *o,
					  const struct target *t,
					  const struct pyd_session *s,
					  const char *origin)
{
	return (struct pyd_report_opts){
		.pid = t->pid,
		.origin = origin,
		.source_kind = t->kind,
		.python_version = pyd_session_version(s),
		.binary = pyd_session_binary(s),
		.ppid = o->ppid,
		.cmdline = o->family ? o->cmdline : NULL,
		.corrupt = pyd_session_corruption(s),
	};
}

/* Write a finished report to stdout and free it. */
static enum pyd_err emit(struct pyd_buf *b)
{
	if (b->data)
		fwrite(b->data, 1, b->len, stdout);
	bool failed = b->failed;
	pyd_buf_free(b);
	return failed ? PYD_E_NOMEM : PYD_OK;
}

static enum pyd_err print_tasks(const struct options *o,
				const struct target *t, struct pyd_session *s,
				const struct pyd_task_graph *g)
{
	char origin[4200];
	describe_origin(o, t, origin, sizeof origin);
	struct pyd_report_opts ro = report_opts(o, t, s, origin);
	struct pyd_buf b = {0};
	pyd_show_tasks(&b, g, o->opt.json, o->opt.table, &ro);
	return emit(&b);
}

static enum pyd_err print_dump(const struct options *o, const struct target *t,
			       struct pyd_session *s, const struct pyd_dump *dump)
{
	char origin[4200];
	describe_origin(o, t, origin, sizeof origin);
	struct pyd_report_opts ro = report_opts(o, t, s, origin);
	struct source_cache *sc =
		!o->opt.no_source && !o->opt.json && !o->spec.snapshot
			? source_cache_new(t->source_root)
			: NULL;
	ro.source_line = sc ? source_cache_line : NULL;
	ro.source_ctx = sc;
	ro.native_all = o->opt.native_all;
	struct pyd_buf b = {0};
	pyd_show_dump(&b, dump, o->opt.json, &ro);
	source_cache_free(sc);
	return emit(&b);
}

static bool dump_truncated(const struct target *t)
{
	return t->core && pyd_core_missing_bytes(t->core) > 0;
}

/* A core shorter than its segments explains any failure to read it better
 * than the failure itself does. */
static enum pyd_err report_truncated(const struct options *o,
				     const struct target *t, bool partial)
{
	struct pyd_explain e = cli_about(&o->spec);
	e.count = (unsigned long long)pyd_core_missing_bytes(t->core);
	e.partial = partial;
	cli_say(&e, PYD_SAY_TRUNCATED, PYD_E_TRUNCATED);
	return PYD_E_TRUNCATED;
}

/* The damage hid even the interpreter: for --json, still an (empty)
 * document, so a pipeline gets JSON and the exit status tells why. */
static enum pyd_err report_truncated_early(const struct options *o,
					   const struct target *t,
					   const struct pyd_session *s)
{
	if (o->opt.json) {
		struct pyd_dump none = {0};
		struct pyd_report_opts ro = {
			.pid = t->pid,
			.source_kind = t->kind,
			.python_version = s ? pyd_session_version(s) : NULL,
			.binary = s ? pyd_session_binary(s) : NULL,
		};
		struct pyd_buf b = {0};
		pyd_report_json(&b, &none, &ro);
		emit(&b);
	}
	return report_truncated(o, t, false);
}

/*
 * After a report was printed: what the reader must know about its
 * completeness (bad of its threads or tasks were not fully read), as the
 * exit status and a message.
 */
static enum pyd_err check_incomplete(const struct options *o,
				     const struct target *t, size_t bad,
				     const char *what)
{
	if (dump_truncated(t))
		return report_truncated(o, t, bad > 0);
	if (!bad)
		return PYD_OK;
	struct pyd_explain e = cli_about(&o->spec);
	e.count = bad;
	e.what = what;
	enum pyd_err err = t->live ? PYD_E_TORN : PYD_E_READ;
	cli_say(&e, PYD_SAY_INCOMPLETE, err);
	return err;
}

/* --native: threads shown without their native stack are named (the exit
 * status stays: their Python stacks are whole). */
static void note_native(const struct options *o, const struct pyd_dump *d)
{
	size_t bad = 0;
	enum pyd_err why = PYD_OK;
	for (size_t i = 0; i < d->nthreads; i++)
		if (d->threads[i].native_error) {
			why = d->threads[i].native_error;
			bad++;
		}
	if (!bad)
		return;
	struct pyd_explain e = cli_about(&o->spec);
	e.count = bad;
	cli_say(&e, PYD_SAY_NATIVE_UNREAD, why);
}

static enum pyd_err check_complete(const struct options *o,
				   const struct target *t,
				   const struct pyd_dump *dump)
{
	size_t bad = 0;
	for (size_t i = 0; i < dump->nthreads; i++)
		bad += dump->threads[i].error != PYD_OK;
	return check_incomplete(o, t, bad, "thread(s)");
}

static enum pyd_err check_tasks_complete(const struct options *o,
					 const struct target *t,
					 const struct pyd_task_graph *g)
{
	size_t bad = 0;
	for (size_t i = 0; i < g->ntasks; i++)
		bad += g->tasks[i].error != PYD_OK;
	enum pyd_err partial = t->live ? PYD_E_TORN : PYD_E_READ;
	if (g->error && !dump_truncated(t)) {
		struct pyd_explain e = cli_about(&o->spec);
		cli_say(&e, PYD_SAY_TASKS_PARTIAL, partial);
	}
	enum pyd_err err = check_incomplete(o, t, bad, "task(s)");
	return err || !g->error ? err : partial;
}

/* Memory found corrupt (a list that loops back, the read budget spent):
 * what was read is shown; the exit status says the rest is missing. */
static enum pyd_err check_corrupt(const struct options *o,
				  const struct pyd_session *s)
{
	const char *why = pyd_session_corruption(s);
	if (!why)
		return PYD_OK;
	struct pyd_explain e = cli_about(&o->spec);
	e.detail = why;
	cli_say(&e, PYD_SAY_CORRUPT, PYD_E_READ);
	return PYD_E_READ;
}

static enum pyd_err save_snapshot(const struct options *o, struct target *t,
				  const struct pyd_runtime *rt)
{
	char detail[512] = "";
	enum pyd_err err = pyd_snapshot_write(t->rec, rt, t->pid, o->opt.save,
					      detail, sizeof detail);
	if (err) {
		struct pyd_explain e = {.prog = "pystack-dump",
					.shell = PYD_SHELL_CLI,
					.file = o->opt.save,
					.detail = detail};
		cli_say(&e, PYD_SAY_SNAPSHOT_SAVE, err);
	}
	return err;
}

/* What was decoded (decoded: PYD_OK, or an error that is not fatal):
 * print it, save the snapshot, and say how complete it is. */
static enum pyd_err show(const struct options *o, struct target *t,
			 const struct pyd_runtime *rt, struct pyd_session *sess,
			 const struct pyd_dump *dump,
			 const struct pyd_task_graph *graph, enum pyd_err decoded)
{
	enum pyd_err err = o->opt.tasks ? print_tasks(o, t, sess, graph)
				    : print_dump(o, t, sess, dump);
	if (!err && dump->has_native)
		note_native(o, dump);
	if (!err && o->opt.save)
		err = save_snapshot(o, t, rt);
	if (!err)
		err = o->opt.tasks ? check_tasks_complete(o, t, graph)
			       : check_complete(o, t, dump);
	if (!err)
		err = check_corrupt(o, sess);
	return err ? err : decoded;
}

static void print_warnings(const struct target *t)
{
	const char *w = t->core ? pyd_core_warnings(t->core) : "";
	if (*w)
		fputs(w, stderr);
}

/* A descendant that is not a Python process (or is gone): listed, not
 * read. */
static bool skippable(const struct options *o, enum pyd_err err,
		      bool decoding)
{
	return o->child && !decoding &&
	       (err == PYD_E_NOTPYTHON || err == PYD_E_NOPROC ||
		err == PYD_E_EXITED);
}

static void print_skipped(const struct options *o, enum pyd_err why)
{
	char reason[200];
	cli_skip_reason(why, NULL, reason, sizeof reason);
	if (!o->opt.json) {
		printf("Process %d (parent %d: %s): skipped, %s\n", o->spec.pid,
		       o->ppid, o->cmdline, reason);
		return;
	}
	struct pyd_buf b = {0};
	pyd_buf_printf(&b, "{\"pid\": %d, \"ppid\": %d, \"cmdline\": ",
		       o->spec.pid, o->ppid);
	pyd_buf_json_str(&b, o->cmdline);
	pyd_buf_printf(&b, ", \"skipped\": ");
	pyd_buf_json_str(&b, reason);
	pyd_buf_printf(&b, "}\n");
	emit(&b);
}

/* One process (or core, or snapshot): read it, print it. */
static enum pyd_err dump_one(struct options *opts)
{
	const struct options o = *opts;
	struct target t;
	struct pyd_runtime rt;
	struct pyd_session *sess = NULL;
	struct pyd_dump dump = {0};
	struct pyd_task_graph graph = {0};
	bool decoding = false;
	char detail[512] = "";
	enum pyd_err err = target_open(&o.spec, &t, detail, sizeof detail);
	if (!err) {
		print_warnings(&t);
		err = take_dump(&t, &o, &rt, &sess, &dump, &graph, &decoding,
				detail, sizeof detail);
	}
	if (skippable(&o, err, decoding)) {
		print_skipped(&o, err);
		err = PYD_OK;
	} else if (err && dump_truncated(&t))
		err = report_truncated_early(&o, &t, sess);
	else if (pyd_err_fatal(err) && o.opt.tasks && decoding)
		report_tasks_error(err, &o, &rt, sess);
	else if (pyd_err_fatal(err))
		cli_report_error(err, &o.spec, detail);
	else
		err = show(&o, &t, &rt, sess, &dump, &graph, err);
	pyd_task_graph_free(&graph);
	pyd_dump_free(&dump);
	pyd_session_close(sess);
	target_close(&t);
	return err;
}

/*
 * --subprocesses: the process and every descendant, parents first; the
 * exit status is the first failure among the Python ones.  JSON:
 * {"processes": [each process's document with "ppid" and "cmdline", or
 * {"pid", "ppid", "cmdline", "skipped"}]}.
 */
static enum pyd_err dump_family(struct options *o)
{
	struct pyd_proc *fam;
	size_t n;
	enum pyd_err err = pyd_live_family(o->spec.pid, &fam, &n), worst = PYD_OK;
	if (err)
		return dump_one(o);
	if (o->opt.json)
		fputs("{\"processes\": [\n", stdout);
	o->family = true;
	for (size_t i = 0; i < n; i++) {
		o->spec.pid = fam[i].pid;
		o->ppid = fam[i].ppid;
		pyd_live_cmdline(fam[i].pid, o->cmdline, sizeof o->cmdline);
		o->child = i > 0;
		if (i)
			fputs(o->opt.json ? ",\n" : "\n", stdout);
		fflush(stdout);
		err = dump_one(o);
		if (err && !worst)
			worst = err;
	}
	if (o->opt.json)
		fputs("]}\n", stdout);
	free(fam);
	return worst;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sample"))
		return sample_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "top"))
		return top_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "diff"))
		return diff_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	struct options o = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	return o.opt.subprocesses ? dump_family(&o) : dump_one(&o);
}
