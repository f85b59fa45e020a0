/*
 * pystack-dump: print the Python stacks of a running CPython process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/memsrc/live.h"
#include "../core/pyd.h"
#include "../core/report/report.h"
#include "source.h"

#ifndef PYD_VERSION
#define PYD_VERSION "dev"
#endif

static const char usage_text[] =
	"Usage: pystack-dump [OPTIONS] PID\n"
	"\n"
	"Print the Python stack of every thread of the CPython process PID,\n"
	"without stopping it and without any code in the target.\n"
	"\n"
	"Options:\n"
	"  -j, --json       print JSON instead of text (schema below)\n"
	"  -l, --locked     pause every thread of the target while reading\n"
	"                   (ptrace), for a perfectly consistent snapshot; the\n"
	"                   target resumes even if pystack-dump is killed\n"
	"      --no-source  do not print source lines under each frame\n"
	"  -h, --help       show this help and exit\n"
	"  -V, --version    show the version and exit\n"
	"\n"
	"Text output follows Python tracebacks: most recent call last. Each\n"
	"thread header gives the OS thread id, its name, whether it holds the\n"
	"GIL and whether it is running or idle.\n"
	"\n"
	"JSON output:\n"
	"  {\"pid\": int, \"python_version\": \"3.12.1\", \"binary\": str,\n"
	"   \"threads\": [{\"tid\": int, \"interpreter\": int, \"name\": str|null,\n"
	"                \"holds_gil\": bool, \"state\": \"running\"|\"idle\"|\"unknown\",\n"
	"                \"error\": str|null,\n"
	"                \"frames\": [{\"function\": str, \"qualname\": str|null,\n"
	"                            \"file\": str, \"line\": int}]}]}\n"
	"  frames[0] is the innermost (currently executing) frame; qualname is\n"
	"  null before Python 3.11.\n"
	"\n"
	"Supported: CPython 3.6 to 3.15 on Linux x86-64, release and debug\n"
	"builds, including processes in containers and chroots.\n"
	"\n"
	"Permissions: reading another process needs the right to ptrace it:\n"
	"run as root, or give pystack-dump CAP_SYS_PTRACE, or (same user only)\n"
	"set kernel.yama.ptrace_scope to 0.\n"
	"\n"
	"Exit status:\n"
	"  0 success             5 not a Python process\n"
	"  2 bad usage           6 unsupported Python version\n"
	"  3 no such process     7 process exited during the read\n"
	"  4 permission denied   8 a stack kept changing; printed what was read\n"
	"                        9 memory not readable as expected\n";

struct options {
	int pid;
	bool json, locked, source;
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump --help' for more information.\n");
	return PYD_E_USAGE;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"locked", no_argument, NULL, 'l'},
		{"no-source", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	*o = (struct options){.source = true};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jlhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'l':
			o->locked = true;
			break;
		case 'S':
			o->source = false;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("pystack-dump %s\n", PYD_VERSION);
			exit(0);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("%s", optind >= argc ? "missing PID"
							  : "expected exactly one PID");
	char *end;
	long pid = strtol(argv[optind], &end, 10);
	if (*end || end == argv[optind] || pid <= 0 || pid > 0x7fffffff)
		return usage_error("'%s' is not a process id", argv[optind]);
	o->pid = (int)pid;
	return 0;
}

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void explain_perm(int pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", pid);
	int scope = read_int_file("/proc/sys/kernel/yama/ptrace_scope");
	fprintf(stderr,
		"pystack-dump: permission denied reading process %d", pid);
	if (stat(path, &st) == 0)
		fprintf(stderr, " (owned by uid %u, you are uid %u)",
			(unsigned)st.st_uid, (unsigned)geteuid());
	fprintf(stderr,
		".\nReading another process needs ptrace rights. Either:\n"
		"  - run as root:             sudo pystack-dump %d\n"
		"  - grant the capability:    sudo setcap cap_sys_ptrace+ep "
		"$(command -v pystack-dump)\n",
		pid);
	if (scope >= 1)
		fprintf(stderr,
			"  - allow same-user tracing: sudo sysctl "
			"kernel.yama.ptrace_scope=0   (it is %d now)\n",
			scope);
	fprintf(stderr, "In a container, start it with --cap-add=SYS_PTRACE.\n");
}

static int report_error(enum pyd_err err, int pid, const char *detail)
{
	switch (err) {
	case PYD_E_NOPROC:
		fprintf(stderr,
			"pystack-dump: no process with pid %d. Check the pid "
			"(e.g. pgrep -a python).\n",
			pid);
		break;
	case PYD_E_PERM:
		explain_perm(pid);
		break;
	case PYD_E_NOTPYTHON:
		fprintf(stderr,
			"pystack-dump: process %d is not running CPython: none of "
			"its mapped files defines _PyRuntime (or, for 3.6, "
			"_PyThreadState_Current).\nIf it embeds a stripped, "
			"statically linked Python, this tool cannot find it.\n",
			pid);
		break;
	case PYD_E_UNSUPPORTED:
		fprintf(stderr,
			"pystack-dump: %s. Supported: CPython 3.6 to 3.15 "
			"(release and debug builds) on Linux x86-64.\n",
			detail && *detail ? detail : "unsupported Python version");
		break;
	case PYD_E_EXITED:
		fprintf(stderr,
			"pystack-dump: process %d exited while it was being "
			"read.\n",
			pid);
		break;
	default:
		fprintf(stderr, "pystack-dump: process %d: %s%s%s\n", pid,
			pyd_strerror(err), detail && *detail ? ": " : "",
			detail ? detail : "");
		break;
	}
	return err;
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

static enum pyd_err take_dump(struct pyd_live *live, const struct options *o,
			      struct pyd_session **sess, struct pyd_dump *dump,
			      char *detail, size_t detailsz)
{
	const struct pyd_memsrc *src = pyd_live_memsrc(live);
	struct pyd_runtime rt;
	enum pyd_err err = pyd_runtime_find_elf(src, &rt);
	if (!err)
		err = pyd_session_open(src, &rt, sess, detail, detailsz);
	if (err)
		return err;
	if (o->locked) {
		if ((err = pyd_live_pause(live)))
			return err;
		test_pause_hook();
	}
	err = pyd_dump_stacks(*sess, dump);
	pyd_live_resume(live);
	return err;
}

static enum pyd_err print_dump(const struct options *o, struct pyd_session *s,
			       const struct pyd_dump *dump)
{
	char root[64];
	snprintf(root, sizeof root, "/proc/%d/root", o->pid);
	struct source_cache *sc = o->source && !o->json ? source_cache_new(root)
							: NULL;
	struct pyd_report_opts ro = {
		.pid = o->pid,
		.python_version = pyd_session_version(s),
		.binary = pyd_session_binary(s),
		.source_line = sc ? source_cache_line : NULL,
		.source_ctx = sc,
	};
	struct pyd_buf b = {0};
	if (o->json)
		pyd_report_json(&b, dump, &ro);
	else
		pyd_report_text(&b, dump, &ro);
	source_cache_free(sc);
	if (b.data)
		fwrite(b.data, 1, b.len, stdout);
	bool failed = b.failed;
	pyd_buf_free(&b);
	return failed ? PYD_E_NOMEM : PYD_OK;
}

/* Threads whose stacks never settled: say so, and exit non-zero. */
static enum pyd_err check_torn(const struct pyd_dump *dump)
{
	size_t bad = 0;
	for (size_t i = 0; i < dump->nthreads; i++)
		bad += dump->threads[i].error != PYD_OK;
	if (!bad)
		return PYD_OK;
	fprintf(stderr,
		"pystack-dump: %zu thread(s) changed too fast to read "
		"consistently; their stacks are marked incomplete. Try "
		"--locked.\n",
		bad);
	return PYD_E_TORN;
}

int main(int argc, char **argv)
{
	struct options o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	struct pyd_live *live = NULL;
	struct pyd_session *sess = NULL;
	struct pyd_dump dump = {0};
	char detail[512] = "";
	enum pyd_err err = pyd_live_open(o.pid, &live);
	if (!err)
		err = take_dump(live, &o, &sess, &dump, detail, sizeof detail);
	if (!err && !(err = print_dump(&o, sess, &dump)))
		err = check_torn(&dump);
	else if (err)
		report_error(err, o.pid, detail);
	pyd_dump_free(&dump);
	pyd_session_close(sess);
	pyd_live_close(live);
	return err;
}
