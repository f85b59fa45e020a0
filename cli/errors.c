/*
 * What went wrong, said once for every pystack-dump command: bad usage,
 * and each error of reading a target with its cause and its fix.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pystack-dump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'pystack-dump --help' for more information.\n");
	return PYD_E_USAGE;
}

int cli_parse_pid(const char *arg, int *pid)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || end == arg || v <= 0 || v > 0x7fffffff)
		return cli_usage_error("'%s' is not a process id", arg);
	*pid = (int)v;
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

/* The one-line story of what went wrong with a file-based source. */
static void file_error(enum pyd_err err, const struct target_spec *spec,
		       const char *detail)
{
	const char *file = spec->core ? spec->core : spec->snapshot;
	switch (err) {
	case PYD_E_NOTCORE:
		fprintf(stderr, "pystack-dump: %s is %s. Give --core an ELF core "
				"file (from a crash, or gcore PID).\n",
			file, detail);
		break;
	case PYD_E_FOREIGN:
		fprintf(stderr, "pystack-dump: %s is %s.\n", file, detail);
		break;
	case PYD_E_EXEMISMATCH:
		fprintf(stderr, "pystack-dump: %s. Pass the executable the "
				"process ran (same build).\n",
			detail);
		break;
	default:
		fprintf(stderr, "pystack-dump: %s: %s%s%s\n", file,
			pyd_strerror(err), *detail ? ": " : "", detail);
		break;
	}
}

int cli_report_error(enum pyd_err err, const struct target_spec *spec,
		     const char *detail)
{
	int pid = spec->pid;
	bool file = spec->core || spec->snapshot;
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
		if (file && *detail)
			fprintf(stderr, "pystack-dump: %s is not a core of CPython: "
					"%s.\n",
				spec->core, detail);
		else
			fprintf(stderr,
				"pystack-dump: %s %d is not running CPython: none "
				"of its mapped files defines _PyRuntime (or, for "
				"3.6, _PyThreadState_Current).\nIf it embeds a "
				"stripped, statically linked Python, this tool "
				"cannot find it.\n",
				file ? "the process of the core, pid" : "process",
				pid);
		break;
	case PYD_E_UNSUPPORTED:
		fprintf(stderr,
			"pystack-dump: %s. Supported: CPython 3.6 to 3.15 "
			"(release and debug builds) on Linux x86-64.\n",
			*detail ? detail : "unsupported Python version");
		break;
	case PYD_E_EXITED:
		fprintf(stderr,
			"pystack-dump: process %d exited while it was being "
			"read.\n",
			pid);
		break;
	default:
		if (file)
			file_error(err, spec, detail);
		else
			fprintf(stderr, "pystack-dump: process %d: %s%s%s\n", pid,
				pyd_strerror(err), *detail ? ": " : "", detail);
		break;
	}
	return err;
}
