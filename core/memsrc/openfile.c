/*
 * Opening the files a user or a target names (pyd_open_regular).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
