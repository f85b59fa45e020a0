/*
 * Every message that explains an error, in one table (explain.h).
 *
 * A message is a template: {prog}, {pid}, {file}, {version}, {error} (the
 * error's short name), {detail}, {count} and {what} stand for the fields
 * of struct pyd_explain; {detail|TEXT} is the detail, or TEXT if there is
 * none; {: detail} is ": " and the detail, or nothing; {live|TEXT} and
 * {partial|TEXT} are TEXT for a live process / a partial read, else
 * nothing; {owner} and {scope} say who owns the process and what
 * kernel.yama.ptrace_scope allows; {python_child} names a descendant of a
 * process that is not Python which is.  The first row that matches wins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "explain.h"

#include "../core/memsrc/live.h"

enum where {
	ANYWHERE,
	PROCESS, /* the CLI, about a live process */
	FILES,   /* the CLI, about a core or snapshot */
	CLI,     /* the CLI, either */
	DEBUGGER,
};

#define ANY_ERR (-1)

struct row {
	enum pyd_say say;
	int err; /* enum pyd_err, or ANY_ERR */
	enum where where;
	bool needs_detail;
	const char *text;
};

#define NOT_CPYTHON_TAIL                                                       \
	" is not running CPython: none of its mapped files defines "          \
	"_PyRuntime (or, for 3.6, _PyThreadState_Current).\nIf it embeds a "  \
	"stripped, statically linked Python, this tool cannot find it.\n"

static const struct row rows[] = {
	/* Errors of reading a target, in the CLI. */
	{PYD_SAY_ERROR, PYD_E_NOPROC, PROCESS, true,
	 "{prog}: process {pid} is {detail}; there is nothing left to read. "
	 "Dump it before it exits, or read the core it left (--core).\n"},
	{PYD_SAY_ERROR, PYD_E_NOTPYTHON, PROCESS, true,
	 "{prog}: process {pid} is {detail}: it runs no Python. Check the "
	 "pid (e.g. pgrep -a python).\n"},
	{PYD_SAY_ERROR, PYD_E_PERM, PROCESS, true,
	 "{prog}: permission denied reading process {pid}{owner}, {detail}.\n"},
	{PYD_SAY_ERROR, PYD_E_NOPROC, CLI, false,
	 "{prog}: no process with pid {pid}. Check the pid (e.g. pgrep -a "
	 "python).\n"},
	{PYD_SAY_ERROR, PYD_E_PERM, CLI, false,
	 "{prog}: permission denied reading process {pid}{owner}.\nReading "
	 "another process needs ptrace rights. Either:\n  - run as root:        "
	 "     sudo pystack-dump {pid}\n  - grant the capability:    sudo setcap "
	 "cap_sys_ptrace+ep $(command -v pystack-dump)\n{scope}In a container, "
	 "start it with --cap-add=SYS_PTRACE.\n"},
	{PYD_SAY_ERROR, PYD_E_NOTPYTHON, FILES, true,
	 "{prog}: {file} is not a core of CPython: {detail}.\n"},
	{PYD_SAY_ERROR, PYD_E_NOTPYTHON, FILES, false,
	 "{prog}: the process of the core, pid {pid}" NOT_CPYTHON_TAIL},
	{PYD_SAY_ERROR, PYD_E_NOTPYTHON, PROCESS, false,
	 "{prog}: process {pid}" NOT_CPYTHON_TAIL "{python_child}"},
	{PYD_SAY_ERROR, PYD_E_UNSUPPORTED, CLI, false,
	 "{prog}: {detail|unsupported Python version}. Supported: CPython 3.6 "
	 "to 3.15 (release and debug builds) on Linux x86-64 and arm64.\n"},
	{PYD_SAY_ERROR, PYD_E_EXITED, CLI, false,
	 "{prog}: process {pid} exited while it was being read.\n"},
	{PYD_SAY_ERROR, PYD_E_NOTCORE, FILES, false,
	 "{prog}: {file} is {detail}. Give --core an ELF core file (from a "
	 "crash, or gcore PID).\n"},
	{PYD_SAY_ERROR, PYD_E_FOREIGN, FILES, false,
	 "{prog}: {file} is {detail}.\n"},
	{PYD_SAY_ERROR, PYD_E_EXEMISMATCH, FILES, false,
	 "{prog}: {detail}. Pass the executable the process ran (same "
	 "build).\n"},
	{PYD_SAY_ERROR, PYD_E_PROFILE, FILES, false,
	 "{prog}: cannot read {file} as a profile: {detail}. Give it collapsed "
	 "stacks, pystack-dump's JSON profile or a recording (sample -f "
	 "collapsed, -f json, -f raw).\n"},
	{PYD_SAY_ERROR, ANY_ERR, FILES, false,
	 "{prog}: {file}: {error}{: detail}\n"},
	{PYD_SAY_ERROR, ANY_ERR, PROCESS, false,
	 "{prog}: process {pid}: {error}{: detail}\n"},
	/* The same in a debugger, which reads through itself. */
	{PYD_SAY_ERROR, PYD_E_NOTPYTHON, DEBUGGER, false,
	 "{prog}: the program is not running CPython: no _PyRuntime among its "
	 "symbols or mapped files.\n"},
	{PYD_SAY_ERROR, PYD_E_UNSUPPORTED, DEBUGGER, false,
	 "{prog}: {detail|unsupported Python}. Supported: CPython 3.6 to 3.15 "
	 "(release and debug builds).\n"},
	{PYD_SAY_ERROR, ANY_ERR, DEBUGGER, false,
	 "{prog}: cannot read the interpreter state: {error}{: detail}.\n"},
	/* Task graphs. */
	{PYD_SAY_TASKS_UNSUPPORTED, ANY_ERR, CLI, false,
	 "{prog}: asyncio task graphs for Python {version} are not supported "
	 "yet (CPython 3.7 and later are).\n"},
	{PYD_SAY_TASKS_UNSUPPORTED, ANY_ERR, DEBUGGER, false,
	 "{prog}: asyncio task graphs need CPython 3.7 or later; this is "
	 "{version}.\n"},
	{PYD_SAY_NO_ASYNCIO_OFFSETS, ANY_ERR, ANYWHERE, false,
	 "{prog}: cannot read asyncio tasks: the _asyncio module's debug "
	 "offsets (its .AsyncioDebug section) were not found. For a core file, "
	 "make the binaries readable (--exe, --sysroot).\n"},
	/* Greenlets. */
	{PYD_SAY_GREENLETS_UNSUPPORTED, ANY_ERR, ANYWHERE, false,
	 "{prog}: greenlets of Python {version} cannot be listed yet (CPython "
	 "3.14 and 3.15 can); the threads are shown.\n"},
	{PYD_SAY_GREENLETS_FREE_THREADED, ANY_ERR, ANYWHERE, false,
	 "{prog}: greenlets cannot be listed in a free-threading build "
	 "(Python {version}): its collector keeps no lists to find them in; "
	 "the threads are shown.\n"},
	{PYD_SAY_GREENLET_LAYOUT, ANY_ERR, ANYWHERE, false,
	 "{prog}: greenlet {detail}: layout not recognised; the threads are "
	 "shown. The README says which greenlet releases are read.\n"},
	{PYD_SAY_TASKS_PARTIAL, ANY_ERR, ANYWHERE, false,
	 "{prog}: the task lists could not be read to their end; the graph may "
	 "miss tasks.{live| Try --locked.}\n"},
	/* After a report: how complete it is. */
	{PYD_SAY_TRUNCATED, ANY_ERR, ANYWHERE, false,
	 "{prog}: the core file is truncated: {count} bytes of its memory are "
	 "missing{partial|; stacks marked incomplete could not be read}. Copy "
	 "the whole core again.\n"},
	{PYD_SAY_OTHER_ROOT, ANY_ERR, ANYWHERE, false,
	 "{prog}: warning: {file} is of a process that had another root (a "
	 "container, a chroot, another machine) or whose files changed since: "
	 "{detail}, which it maps, is not here, or is another build. Its "
	 "source lines are not shown, as this machine's files of the same "
	 "paths may differ. Pass --sysroot DIR, the root the process ran in, "
	 "to show them, or --no-source.\n"},
	{PYD_SAY_NATIVE_UNREAD, ANY_ERR, ANYWHERE, false,
	 "{prog}: the native stacks of {count} thread(s) could not be "
	 "unwound ({error}); they show their Python frames only. The "
	 "binaries and libraries the target maps must be readable: a core's "
	 "where it says, or under --sysroot.\n"},
	{PYD_SAY_INCOMPLETE, ANY_ERR, ANYWHERE, false,
	 "{prog}: {count} {what} could not be read{live| consistently}; their "
	 "stacks are marked incomplete.{live| Try --locked.}\n"},
	{PYD_SAY_CORRUPT, ANY_ERR, CLI, false,
	 "{prog}: the interpreter's memory is corrupt: {detail}. What was "
	 "read before that is shown; the rest could not be read.\n"},
	{PYD_SAY_CORRUPT, ANY_ERR, DEBUGGER, false,
	 "{prog}: the interpreter's memory is corrupt: {detail}; what was "
	 "read before that is shown.\n"},
	{PYD_SAY_SAMPLE_CORRUPT, ANY_ERR, ANYWHERE, false,
	 "{prog}: the interpreter's memory is corrupt: {detail}; what could "
	 "be read was sampled.\n"},
	{PYD_SAY_SNAPSHOT_SAVE, ANY_ERR, ANYWHERE, false,
	 "{prog}: cannot save the snapshot {file}: {detail|{error}}\n"},
	{PYD_SAY_SNAPSHOT_NO_VARS, ANY_ERR, ANYWHERE, false,
	 "{prog}: {file} holds no variables: it was saved without --locals. "
	 "Save the snapshot with --locals --save-snapshot to read them from "
	 "it.\n"},
	{PYD_SAY_CANNOT_WRITE, ANY_ERR, ANYWHERE, false,
	 "{prog}: cannot write {file}{: detail}; name a file in a directory "
	 "that exists, that you may write to and that has room\n"},
	{PYD_SAY_NO_COREDUMP, ANY_ERR, CLI, false,
	 "{prog}: no core of {file} kept by systemd-coredump: {detail}. Is "
	 "systemd-coredump the kernel's core handler (cat "
	 "/proc/sys/kernel/core_pattern), and was the process's core size "
	 "limit above 0? List the cores kept with coredumpctl list; give a "
	 "core file itself with --core FILE.\n"},
	/* A debugger with nothing to read yet. */
	{PYD_SAY_NO_TARGET, ANY_ERR, DEBUGGER, false,
	 "{prog}: no process or core; run, attach or load a core first\n"},
	{PYD_SAY_NOT_STOPPED, ANY_ERR, DEBUGGER, false,
	 "{prog}: the process is running; interrupt it first\n"},
	/* py-sample samples from outside the debugger, through /proc. */
	{PYD_SAY_SAMPLE_ON_CORE, ANY_ERR, DEBUGGER, false,
	 "{prog} needs a live process; the debugger has a core file open "
	 "(py-bt and py-tasks work on it).\n"},
	{PYD_SAY_SAMPLE_REMOTE, ANY_ERR, DEBUGGER, false,
	 "{prog} needs a live process on this machine; on a remote target, "
	 "run pystack-dump sample on its host.\n"},
	{PYD_SAY_SAMPLE_NO_PROC, ANY_ERR, DEBUGGER, false,
	 "{prog}: cannot read the process from outside the debugger (through "
	 "/proc){: detail}.\n"},
	{PYD_SAY_SAMPLE_NO_CLI, ANY_ERR, DEBUGGER, false,
	 "{prog}: the command file does not say where pystack-dump is.\n"},
	/* pystack-dump sample. */
	{PYD_SAY_LAUNCH_EXITED, ANY_ERR, CLI, false,
	 "{prog}: {file}: {detail}; nothing was sampled.\n"},
	{PYD_SAY_MODE_UNSUPPORTED, ANY_ERR, CLI, false, "{prog}: {detail}.\n"},
	/* sample --push: sending each interval's profile to Pyroscope. */
	{PYD_SAY_PUSH_UNSUPPORTED, ANY_ERR, CLI, false,
	 "{prog}: --push is not available: {detail}. Use a dynamic build "
	 "with libcurl installed, or write the profiles with --every SEC -o "
	 "'prof-%H%M%S.pb.gz' and send them with curl.\n"},
	{PYD_SAY_PUSH_FAILING, ANY_ERR, CLI, false,
	 "{prog}: cannot push to {file}{: detail}; sampling goes on, and each "
	 "profile is sent again with a growing pause (up to {count} s). Check "
	 "that the server runs and the URL (its host, port, http or https).\n"},
	{PYD_SAY_PUSH_REJECTED, ANY_ERR, CLI, false,
	 "{prog}: {file} refused a profile{: detail}; such profiles are not "
	 "sent again, and this is said once. Check the URL's path, --app and "
	 "--labels, and the credentials (user:password@ in the URL).\n"},
	{PYD_SAY_PUSH_DROPPED, ANY_ERR, CLI, false,
	 "{prog}: the push queue is full ({count} profiles waiting): the "
	 "oldest is dropped for each new one until {file} takes them again; "
	 "said once, counted at the end.\n"},
	{PYD_SAY_PUSH_UNSENT, ANY_ERR, CLI, false,
	 "{prog}: {count} profile(s) were not sent to {file} before the wait "
	 "at the end ran out{: detail}; write them to files too with -o next "
	 "time.\n"},
	/* pystack-dump report. */
	{PYD_SAY_CANNOT_READ, ANY_ERR, ANYWHERE, false,
	 "{prog}: cannot read {file}{: detail}\n"},
	{PYD_SAY_BAD_RECORDING, ANY_ERR, CLI, false,
	 "{prog}: {file}: {error}{: detail}.{partial| The samples before "
	 "that were reported.}\n"},
	{PYD_SAY_RECORDING_CUT, ANY_ERR, CLI, false,
	 "{prog}: {file} ends mid-record (the profiler was killed, or the "
	 "file is still being written): reported the samples before the cut "
	 "({count}).\n"},
	/* pystack-dump serve. */
	{PYD_SAY_CANNOT_LISTEN, PYD_E_PERM, CLI, false,
	 "{prog}: cannot listen on {file}: {detail}. Ports below 1024 need "
	 "root or CAP_NET_BIND_SERVICE: pick a port above 1023.\n"},
	{PYD_SAY_CANNOT_LISTEN, ANY_ERR, CLI, false,
	 "{prog}: cannot listen on {file}: {detail}. Give --listen an address "
	 "of this machine and a free port (port 0 picks one and says it).\n"},
	{PYD_SAY_NO_SERVE, ANY_ERR, CLI, false,
	 "{prog}: serve is not in this build: {detail}. Use a dynamic build "
	 "of pystack-dump (meson with libmicrohttpd) for it.\n"},
	/* Why --subprocesses reads no stack of a child. */
	{PYD_SAY_SKIPPED, PYD_E_NOTPYTHON, CLI, false, "not a Python process"},
	{PYD_SAY_SKIPPED, PYD_E_NOPROC, CLI, false, "exited"},
	{PYD_SAY_SKIPPED, PYD_E_EXITED, CLI, false, "exited"},
	{PYD_SAY_SKIPPED, ANY_ERR, CLI, false, "{detail|{error}}"},
};

static bool row_matches(const struct row *r, const struct pyd_explain *e,
			enum pyd_say say, enum pyd_err err)
{
	bool cli = e->shell == PYD_SHELL_CLI;
	bool where = r->where == ANYWHERE ||
		     (r->where == DEBUGGER && !cli) ||
		     (r->where == CLI && cli) ||
		     (r->where == FILES && cli && e->file) ||
		     (r->where == PROCESS && cli && !e->file);
	return r->say == say && (r->err == ANY_ERR || r->err == (int)err) &&
	       where && (!r->needs_detail || (e->detail && *e->detail));
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

/* {owner}: " (owned by uid N, you are uid M)" where /proc tells. */
static void put_owner(struct pyd_buf *out, int pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", pid);
	if (stat(path, &st) == 0)
		pyd_buf_printf(out, " (owned by uid %u, you are uid %u)",
			       (unsigned)st.st_uid, (unsigned)geteuid());
}

/* {scope}: the sysctl that allows same-user tracing, if it forbids it. */
static void put_scope(struct pyd_buf *out)
{
	int scope = read_int_file("/proc/sys/kernel/yama/ptrace_scope");
	if (scope >= 1)
		pyd_buf_printf(out,
			       "  - allow same-user tracing: sudo sysctl "
			       "kernel.yama.ptrace_scope=0   (it is %d now)\n",
			       scope);
}

/* {python_child}: of a wrapper (a shell, a supervisor, a launcher), the
 * first descendant whose executable is a python, and what to do. */
static void put_python_child(struct pyd_buf *out, int pid)
{
	struct pyd_proc *fam;
	size_t n;
	if (pid <= 0 || pyd_live_family(pid, &fam, &n))
		return;
	for (size_t i = 1; i < n; i++) {
		char path[64], exe[4096], cmd[256], line[1024];
		snprintf(path, sizeof path, "/proc/%d/exe", fam[i].pid);
		ssize_t len = readlink(path, exe, sizeof exe - 1);
		if (len <= 0)
			continue;
		exe[len] = 0;
		const char *base = strrchr(exe, '/');
		if (strncmp(base ? base + 1 : exe, "python", 6))
			continue;
		pyd_live_cmdline(fam[i].pid, cmd, sizeof cmd);
		pyd_one_line(cmd, line, sizeof line);
		pyd_buf_printf(out,
			       "Its descendant process %d (%s) runs Python: "
			       "give that pid, or add --subprocesses to read "
			       "the whole family.\n",
			       fam[i].pid, line);
		break;
	}
	free(fam);
}

static void expand(struct pyd_buf *out, const struct pyd_explain *e,
		   enum pyd_err err, const char *t, size_t n);

/* One {name} or {name|alt} placeholder (alt is a template too). */
static void put_field(struct pyd_buf *out, const struct pyd_explain *e,
		      enum pyd_err err, const char *name, size_t len,
		      const char *alt, size_t altlen)
{
#define IS(s) (len == sizeof(s) - 1 && !memcmp(name, s, len))
	const char *detail = e->detail ? e->detail : "";
	if (IS("prog"))
		pyd_buf_printf(out, "%s", e->prog);
	else if (IS("pid"))
		pyd_buf_printf(out, "%d", e->pid);
	else if (IS("file"))
		pyd_buf_printf(out, "%s", e->file ? e->file : "");
	else if (IS("version"))
		pyd_buf_printf(out, "%s", e->version ? e->version : "?");
	else if (IS("error"))
		pyd_buf_printf(out, "%s", pyd_strerror(err));
	else if (IS("count"))
		pyd_buf_printf(out, "%llu", e->count);
	else if (IS("what"))
		pyd_buf_printf(out, "%s", e->what ? e->what : "");
	else if (IS("owner"))
		put_owner(out, e->pid);
	else if (IS("scope"))
		put_scope(out);
	else if (IS("python_child"))
		put_python_child(out, e->pid);
	else if (IS(": detail") && *detail)
		pyd_buf_printf(out, ": %s", detail);
	else if (IS("detail") && (*detail || !alt))
		pyd_buf_printf(out, "%s", detail);
	else if ((IS("detail") && alt) || (IS("live") && e->live) ||
		 (IS("partial") && e->partial))
		expand(out, e, err, alt, altlen);
#undef IS
}

static void expand(struct pyd_buf *out, const struct pyd_explain *e,
		   enum pyd_err err, const char *t, size_t n)
{
	const char *end = t + n;
	while (t < end) {
		const char *open = memchr(t, '{', (size_t)(end - t));
		if (!open) {
			pyd_buf_put(out, t, (size_t)(end - t));
			return;
		}
		pyd_buf_put(out, t, (size_t)(open - t));
		/* The matching '}', and the '|' at this level, if any. */
		const char *p = open + 1, *bar = NULL;
		for (int depth = 0; p < end && (*p != '}' || depth); p++) {
			depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
			if (*p == '|' && !depth && !bar)
				bar = p;
		}
		const char *name_end = bar ? bar : p;
		put_field(out, e, err, open + 1, (size_t)(name_end - open - 1),
			  bar ? bar + 1 : NULL, bar ? (size_t)(p - bar - 1) : 0);
		t = p < end ? p + 1 : end;
	}
}

void pyd_explain_debugger(struct pyd_buf *out, const char *prog,
			  enum pyd_err err, const char *detail)
{
	struct pyd_explain e = {.prog = prog,
				.shell = PYD_SHELL_DEBUGGER,
				.detail = detail};
	pyd_explain(out, &e, PYD_SAY_ERROR, err);
}

void pyd_explain_debugger_say(struct pyd_buf *out, const char *prog,
			      enum pyd_say say, const char *file,
			      const char *detail)
{
	struct pyd_explain e = {.prog = prog,
				.shell = PYD_SHELL_DEBUGGER,
				.file = file,
				.detail = detail};
	pyd_explain(out, &e, say, PYD_OK);
}

void pyd_explain_skipped(enum pyd_err err, const char *detail, char *out,
                         size_t size)
{
	struct pyd_explain e = {.prog = "pystack-dump",
	                        .shell = PYD_SHELL_CLI,
	                        .detail = detail};
	struct pyd_buf b = {0};
	pyd_explain(&b, &e, PYD_SAY_SKIPPED, err);
	snprintf(out, size, "%.*s", (int)b.len, b.data ? b.data : "");
	pyd_buf_free(&b);
}

void pyd_explain(struct pyd_buf *out, const struct pyd_explain *e,
		 enum pyd_say say, enum pyd_err err)
{
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
		if (row_matches(&rows[i], e, say, err)) {
			expand(out, e, err, rows[i].text, strlen(rows[i].text));
			return;
		}
	pyd_buf_printf(out, "%s: %s\n", e->prog, pyd_strerror(err));
}
