/*
 * Opening the files a user or a target names (pyd_open_regular), and a
 * target's files under the root a user gives (pyd_open_under).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memsrc.h"

int pyd_open_regular(const char *path)
{
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer;
	 * on a regular file it changes nothing. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		return -1;
	int e = fstat(fd, &st) != 0 ? errno
	        : S_ISREG(st.st_mode) ? 0
	        : S_ISDIR(st.st_mode) ? EISDIR
	                              : EINVAL;
	if (!e)
		return fd;
	close(fd);
	errno = e;
	return -1;
}

/* gdb's gcore of a chroot's process writes the paths the host sees (it
 * reads /proc/PID/maps from outside): those already under the sysroot
 * are not put under it again. */
static bool under_sysroot(const char *path, const char *sysroot)
{
	size_t n = strlen(sysroot);
	while (n && sysroot[n - 1] == '/')
		n--;
	return n && strncmp(path, sysroot, n) == 0 && path[n] == '/';
}

int pyd_open_under(const char *sysroot, const char *path, char *used,
                   size_t usedsz)
{
	char buf[8192];
	const char *p = path;
	if (sysroot && *sysroot && !under_sysroot(path, sysroot)) {
		snprintf(buf, sizeof buf, "%s%s", sysroot, path);
		p = buf;
	}
	int fd = pyd_open_regular(p);
	if (fd >= 0 && used)
		snprintf(used, usedsz, "%s", p);
	return fd;
}
