/*
 * pystack-dump: print the Python stacks of a running CPython process.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/pyd.h"
#include "../core/report/report.h"
#include "coredumps.h"
#include "cli.h"
#include "../frontend/dump.h"
#include "../frontend/target.h"

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
	"       pystack-dump serve [OPTIONS] PID...|--all  (profiles over HTTP\n"
	"                                          for Parca, Alloy, go tool\n"
	"                                          pprof: see\n"
	"                                          pystack-dump serve --help)\n"
	"       pystack-dump [OPTIONS] --core CORE [--exe EXE] [--sysroot DIR]\n"
	"       pystack-dump [OPTIONS] --coredump PID|PROGRAM\n"
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
	"                   (compressed or not: gzip, zstd, xz, lz4)\n"
	"      --coredump PID|PROGRAM  read the newest core systemd-coredump\n"
	"                   kept of a crash of process PID, or of PROGRAM (a\n"
	"                   path, or a name: python3.12), found with\n"
	"                   coredumpctl, else in /var/lib/systemd/coredump;\n"
	"                   the header says its executable, signal and time\n"
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
	"                   length (past 18,000 digits only its length).\n"
	"                   The locals of one dump cost at most\n"
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
	"      --greenlets  after the threads, every greenlet (greenlet and\n"
	"                   gevent; CPython 3.14-3.15; greenlet 3.3, or any\n"
	"                   release with debug info): its state, parent, what\n"
	"                   it was spawned with, the stack a suspended one\n"
	"                   stopped in and the call it waits in (a gevent\n"
	"                   hub's timer or I/O watcher, an Event, a lock);\n"
	"                   with --locals each frame's variables.\n"
	"                   With --json: only the greenlets,\n"
	"                   docs/greenlets-json.md\n"
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
	"Supported: CPython 3.6 to 3.15 on Linux x86-64 and arm64, release and debug\n"
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
	"                          file (diff, report)\n"
	"                       17 an output file (-o, --save-snapshot)\n"
	"                          cannot be written\n"
	"                       18 --coredump: no kept core matches\n";

struct options {
	struct target_spec spec; /* from opt's core, exe, ... and the PID */
	struct pyd_opts opt;
	/* --subprocesses: the process being read is one of a family */
	bool family;
	bool child; /* a descendant: skipped, not an error, if not Python */
	int ppid;
	char cmdline[1024];
};

/* Exactly one source: a PID, --core or --snapshot; then the options'
 * combinations, as every dump checks them. */
static int check_sources(int argc, char **argv, struct options *o)
{
	struct target_spec *t = &o->spec;
	int files = !!o->opt.core + !!t->snapshot + !!o->opt.coredump,
	    rest = argc - optind;
	char err[256];
	if (files > 1 || (files && rest > 0))
		return cli_usage_error("%s", "give one of PID, --core, --coredump "
					     "or --snapshot");
	if (!files && rest != 1)
		return cli_usage_error("%s", rest ? "expected exactly one PID"
					      : "missing PID (or --core, --coredump, "
						"--snapshot)");
	if (o->opt.coredump && o->opt.subprocesses)
		return cli_usage_error("%s", "--subprocesses reads live processes, "
					     "not a core (--coredump)");
	if (!pyd_dump_check(t, &o->opt, err, sizeof err))
		return cli_usage_error("%s", err);
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
	/* --coredump names a core found later (main); checked as one */
	o->spec = (struct target_spec){.core = p->core ? p->core : p->coredump,
				       .exe = p->exe,
				       .sysroot = p->sysroot,
				       .snapshot = p->snapshot,
				       .record = p->save != NULL};
	return check_sources(argc, argv, o);
}

/* Write a finished buffer to f and free it. */
static void to_file(void *f, const char *s, size_t n)
{
	fwrite(s, 1, n, f);
}

static void emit(struct pyd_buf *b, FILE *f)
{
	if (b->data)
		fwrite(b->data, 1, b->len, f);
	pyd_buf_free(b);
}

/* A descendant that is not a Python process (or is gone): not an error
 * (the PID itself not being Python is: exit status 5). */
static bool skippable(const struct options *o, enum pyd_err err,
		      bool decoding)
{
	return o->child && !decoding &&
	       (err == PYD_E_NOTPYTHON || err == PYD_E_NOPROC ||
		err == PYD_E_EXITED);
}

static void print_skipped(const struct options *o, enum pyd_err why)
{
	char reason[200], cmd[4 * sizeof o->cmdline + 1];
	pyd_explain_skipped(why, NULL, reason, sizeof reason);
	if (!o->opt.json) {
		pyd_one_line(o->cmdline, cmd, sizeof cmd);
		printf("Process %d (%s; parent %d): skipped, %s\n", o->spec.pid,
		       cmd, o->ppid, reason);
		return;
	}
	struct pyd_buf b = {0};
	pyd_buf_printf(&b, "{\"pid\": %d, \"ppid\": %d, \"cmdline\": ",
		       o->spec.pid, o->ppid);
	pyd_buf_json_str(&b, o->cmdline);
	pyd_buf_printf(&b, ", \"skipped\": ");
	pyd_buf_json_str(&b, reason);
	pyd_buf_printf(&b, "}\n");
	emit(&b, stdout);
}

/* One process (or core, or snapshot): read it, print it; *shown (if not
 * NULL) whether its report was. */
static enum pyd_err dump_one(struct options *opts, bool *shown)
{
	/* A snapshot's file is made sure of before the target is read (and
	 * stopped, with --locked), not found unwritable at the end. */
	int rc = cli_output_check("pystack-dump", opts->opt.save);
	if (rc)
		return (enum pyd_err)rc;
	const struct pyd_dump_job job = {.prog = "pystack-dump",
					 .spec = opts->spec,
					 .opt = opts->opt,
					 .family = opts->family,
					 .ppid = opts->ppid,
					 .cmdline = opts->cmdline};
	struct pyd_buf out = {.sink = to_file, .sink_ctx = stdout}, msg = {0};
	struct pyd_dump_outcome how;
	enum pyd_err err = pyd_dump_run(&job, &out, &msg, &how);
	if (shown)
		*shown = how.shown;
	/* In a family every process has its entry, the PID itself too (a
	 * shell that is not Python): one that gave no report is listed with
	 * why, so the text has no empty block and the JSON list no hole. */
	if (opts->family && !out.len && !out.sunk)
		print_skipped(opts, err);
	if (skippable(opts, err, how.decoding)) {
		pyd_buf_free(&msg);
		err = PYD_OK;
	}
	emit(&out, stdout);
	emit(&msg, stderr);
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
		return dump_one(o, NULL);
	int root = o->spec.pid;
	bool any = false;
	if (o->opt.json)
		fputs("{\"processes\": [\n", stdout);
	o->family = true;
	for (size_t i = 0; i < n; i++) {
		o->spec.pid = fam[i].pid;
		o->ppid = fam[i].ppid;
		pyd_live_cmdline(fam[i].pid, o->cmdline, sizeof o->cmdline);
		/* A wrapper (a shell, a supervisor) that is not Python is
		 * listed as skipped like any descendant, once it has some. */
		o->child = n > 1;
		if (i)
			fputs(o->opt.json ? ",\n" : "\n", stdout);
		fflush(stdout);
		bool shown = false;
		err = dump_one(o, &shown);
		any |= shown;
		if (err && !worst)
			worst = err;
	}
	if (o->opt.json)
		fputs("]}\n", stdout);
	free(fam);
	if (!any && n > 1) {
		fprintf(stderr, "pystack-dump: process %d runs no Python, nor "
			"do its descendants (%zu). Check the pid (e.g. pgrep -a "
			"python).\n", root, n - 1);
		return PYD_E_NOTPYTHON;
	}
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
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve_main(argc - 1, argv + 1);
	struct options o = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	if (o.opt.coredump) {
		struct cli_coredump cd;
		if ((rc = cli_find_coredump(o.opt.coredump, &cd)))
			return rc;
		o.spec.core = cd.path;
		o.spec.crash = &cd.crash;
		rc = dump_one(&o, NULL);
		cli_coredump_done(&cd);
		return rc;
	}
	return o.opt.subprocesses ? dump_family(&o) : dump_one(&o, NULL);
}
