/*
 * --coredump WHAT: the newest core systemd-coredump kept of a process,
 * named the way one looks a crash up (its pid, its executable's path or
 * its name).  coredumpctl is asked first: it knows what the journal says
 * of the crash and where the core is (a file, or inside the journal).
 * Without it, or when the journal knows nothing (rotated away, no
 * journald in a container), the directory systemd-coredump stores cores
 * in is read: its file names (core.COMM.UID.BOOT.PID.USEC[.zst]) and
 * the extended attributes it gives each file say the same things.
 */
#define _GNU_SOURCE /* pipe2 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "coredumps.h"

extern char **environ;

/* Where systemd-coredump keeps the cores it stores as files (Storage=external,
 * its default); fixed when systemd is built. */
static const char storage_dir[] = "/var/lib/systemd/coredump";

/* ---- coredumpctl ---- */

/* Run argv (found on PATH), its standard output into out (at most
 * outsz - 1 bytes, NUL-ended; the rest read and dropped, so that it is
 * never cut off by a closed pipe); its exit status, or -1 if it could
 * not be run (not installed). */
static int run_capture(char *const argv[], char *out, size_t outsz)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	size_t n = 0;
	if (rc == 0) {
		char spill[4096];
		ssize_t k;
		for (;;) {
			bool room = n + 1 < outsz;
			k = room ? read(fds[0], out + n, outsz - 1 - n)
			         : read(fds[0], spill, sizeof spill);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			n += room ? (size_t)k : 0;
		}
	}
	out[n] = '\0';
	close(fds[0]);
	if (rc != 0)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value after "KEY: " on a line of coredumpctl info's text, up to
 * the line's end, into val; false if there is no such line. */
static bool info_field(const char *text, const char *key, char *val,
		       size_t valsz)
{
	size_t klen = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *p = l + strspn(l, " ");
		if (strncmp(p, key, klen) || strncmp(p + klen, ": ", 2))
			continue;
		p += klen + 2;
		size_t n = strcspn(p, "\n");
		snprintf(val, valsz, "%.*s", (int)n, p);
		return true;
	}
	return false;
}

/* Cut "text (more)" to "text". */
static void cut_paren(char *s)
{
	char *p = strstr(s, " (");
	if (p)
		*p = '\0';
}

/* The newest entry coredumpctl knows for what: 1 with cd filled; 0 if
 * it knows none with a core it can give; -1 if it is not installed. */
static int ask_coredumpctl(const char *what, struct cli_coredump *cd)
{
	static char text[65536];
	char *info[] = {"coredumpctl", "--no-pager", "-1", "info",
			(char *)what, NULL};
	int rc = run_capture(info, text, sizeof text);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	char v[PATH_MAX + 32];
	if (!info_field(text, "Storage", v, sizeof v))
		return 0;
	if (!strcmp(v, "journal")) {
		/* Kept inside the journal: coredumpctl writes it out, to a
		 * file of a directory of our own (it will not overwrite one). */
		snprintf(cd->tmp, sizeof cd->tmp, "%s/pystack-dump-core.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(cd->tmp)) {
			cd->tmp[0] = '\0';
			return 0;
		}
		snprintf(cd->path, sizeof cd->path, "%.*s/core",
			 (int)sizeof cd->path - 8, cd->tmp);
		char *dump[] = {"coredumpctl", "--no-pager", "-1", "-o",
				cd->path, "dump", (char *)what, NULL};
		char ignored[1];
		if (run_capture(dump, ignored, sizeof ignored) != 0) {
			cli_coredump_done(cd);
			return 0;
		}
	} else {
		/* "/var/lib/systemd/coredump/core.... (present)"; a core
		 * "(missing)" or "(inaccessible)" to this user is looked for
		 * in the directory, which says why. */
		char *state = strstr(v, " (");
		if (state && strcmp(state, " (present)"))
			return 0;
		cut_paren(v);
		if (strlen(v) >= sizeof cd->path)
			return 0;
		memcpy(cd->path, v, strlen(v) + 1);
	}
	if (info_field(text, "PID", v, sizeof v))
		cd->pid = atoi(v);
	if (info_field(text, "Signal", v, sizeof v))
		cd->crash.signal = atoi(v);
	if (info_field(text, "Timestamp", cd->time, sizeof cd->time))
		cut_paren(cd->time);
	if (info_field(text, "Executable", cd->exe, sizeof cd->exe))
		cut_paren(cd->exe);
	cd->crash.found_by = "coredumpctl";
	return 1;
}

/* ---- the storage directory ---- */

/* One stored core's facts, from its attributes, else its name. */
struct stored {
	int pid;
	long long usec;
	int signal;
	char comm[64], exe[PATH_MAX];
};

static bool attr(const char *path, const char *name, char *val, size_t valsz)
{
	ssize_t n = getxattr(path, name, val, valsz - 1);
	if (n < 0)
		return false;
	val[n] = '\0';
	return true;
}

/* systemd-coredump escapes '.', '/' and blanks in a name as \xNN. */
static void unescape(const char *s, size_t n, char *out, size_t outsz)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < outsz; i++) {
		unsigned v;
		if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' &&
		    sscanf(s + i + 2, "%2x", &v) == 1) {
			out[o++] = (char)v;
			i += 3;
		} else
			out[o++] = s[i];
	}
	out[o] = '\0';
}

/* Parse name (core.COMM.UID.BOOT.PID.USEC[.EXT]) into *s; false if it is
 * not one of systemd-coredump's. */
static bool parse_name(const char *name, struct stored *s)
{
	const char *f[7];
	size_t len[7], k = 0;
	for (const char *p = name; k < 7; k++) {
		f[k] = p;
		len[k] = strcspn(p, ".");
		p += len[k];
		if (!*p) {
			k++;
			break;
		}
		p++;
	}
	if (k < 6 || len[0] != 4 || strncmp(f[0], "core", 4))
		return false;
	char *end;
	s->pid = (int)strtol(f[4], &end, 10);
	if (end != f[4] + len[4] || s->pid <= 0)
		return false;
	s->usec = strtoll(f[5], &end, 10);
	if (end != f[5] + len[5])
		return false;
	unescape(f[1], len[1], s->comm, sizeof s->comm);
	return true;
}

/* The facts of the stored core at path named name; false if it is none. */
static bool read_stored(const char *path, const char *name, struct stored *s)
{
	*s = (struct stored){0};
	if (!parse_name(name, s))
		return false;
	char v[PATH_MAX];
	if (attr(path, "user.coredump.pid", v, sizeof v))
		s->pid = atoi(v);
	if (attr(path, "user.coredump.timestamp", v, sizeof v))
		s->usec = atoll(v);
	if (attr(path, "user.coredump.signal", v, sizeof v))
		s->signal = atoi(v);
	attr(path, "user.coredump.comm", s->comm, sizeof s->comm);
	attr(path, "user.coredump.exe", s->exe, sizeof s->exe);
	return true;
}

/* Does the stored core match what: a pid, an executable's path, or a
 * process's name (its comm, or its executable's file name)? */
static bool matches(const struct stored *s, const char *what)
{
	char *end;
	long pid = strtol(what, &end, 10);
	if (!*end && end != what)
		return s->pid == pid;
	if (strchr(what, '/'))
		return !strcmp(s->exe, what);
	const char *base = strrchr(s->exe, '/');
	return !strcmp(s->comm, what) || (base && !strcmp(base + 1, what));
}

/* The newest matching core in the storage directory: true with cd
 * filled; else false, with *seen the number of cores there (-1: the
 * directory cannot be read, errno kept in *err). */
static bool scan_storage(const char *what, struct cli_coredump *cd, int *seen,
			 int *err)
{
	DIR *d = opendir(storage_dir);
	*seen = 0;
	if (!d) {
		*seen = -1;
		*err = errno;
		return false;
	}
	struct stored best = {.usec = -1}, s;
	char path[PATH_MAX], best_path[PATH_MAX] = "";
	struct dirent *e;
	while ((e = readdir(d))) {
		snprintf(path, sizeof path, "%s/%s", storage_dir, e->d_name);
		if (!read_stored(path, e->d_name, &s))
			continue;
		++*seen;
		if (matches(&s, what) && s.usec > best.usec) {
			best = s;
			snprintf(best_path, sizeof best_path, "%s", path);
		}
	}
	closedir(d);
	if (!best_path[0])
		return false;
	snprintf(cd->path, sizeof cd->path, "%s", best_path);
	cd->pid = best.pid;
	cd->crash.signal = best.signal;
	snprintf(cd->exe, sizeof cd->exe, "%s", best.exe[0] ? best.exe : best.comm);
	time_t t = (time_t)(best.usec / 1000000);
	struct tm tm;
	if (localtime_r(&t, &tm))
		strftime(cd->time, sizeof cd->time, "%a %Y-%m-%d %H:%M:%S %Z", &tm);
	cd->crash.found_by = storage_dir;
	return true;
}

/* ---- the one entry point ---- */

int cli_find_coredump(const char *what, struct cli_coredump *cd)
{
	*cd = (struct cli_coredump){0};
	cd->crash.exe = cd->exe;
	cd->crash.time = cd->time;
	int ctl = ask_coredumpctl(what, cd);
	if (ctl > 0)
		return 0;
	int seen, err = 0;
	if (scan_storage(what, cd, &seen, &err))
		return 0;
	char detail[512], dir[300];
	enum pyd_err code = PYD_E_NOCOREDUMP;
	if (seen < 0 && (err == EACCES || err == EPERM)) {
		code = PYD_E_PERM;
		snprintf(dir, sizeof dir, "%s cannot be read by this user",
			 storage_dir);
	} else if (seen < 0)
		snprintf(dir, sizeof dir, "%s: %s", storage_dir, strerror(err));
	else
		snprintf(dir, sizeof dir, "none of the %d core(s) in %s is of it",
			 seen, storage_dir);
	snprintf(detail, sizeof detail, "%s, and %s",
		 ctl < 0 ? "coredumpctl is not installed"
			 : "coredumpctl lists no core of it that it still has",
		 dir);
	cli_say_about("pystack-dump", PYD_SAY_NO_COREDUMP, code, what, detail);
	return code;
}

void cli_coredump_done(struct cli_coredump *cd)
{
	if (!cd->tmp[0])
		return;
	unlink(cd->path);
	rmdir(cd->tmp);
	cd->tmp[0] = '\0';
}
