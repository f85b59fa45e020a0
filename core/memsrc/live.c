/*
 * Live-process memory source (Linux).
 */
#define _GNU_SOURCE
#include "../grow.h"
#include "live.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* More threads than this and the rest are not listed (nor paused). */
#define LIVE_MAX_THREADS 65536

/* stdio's buffer for /proc/PID/maps. */
#define MAPS_BUF (64 * 1024)

/* Ranges per process_vm_readv call (the kernel's UIO_MAXIOV). */
#define IOV_BATCH 1024

struct pyd_live {
	struct pyd_memsrc src;
	int pid;
	int mem_fd;     /* /proc/PID/mem, opened lazily */
	bool use_vm;    /* process_vm_readv works */
	char root[64];  /* /proc/PID/root */
	struct pyd_mapping *maps;
	size_t nmaps;
	struct pyd_os_thread *threads;
	size_t nthreads;
	int64_t *paused; /* tids we seized */
	/* each one's run state when seized: a stopped thread is in no
	 * state of its own */
	enum pyd_thread_run *paused_run;
	size_t npaused;
	/* Open /proc/PID/task/TID/stat files, for thread_run. */
	struct stat_fd {
		int64_t tid;
		int fd;
	} *stat_fds;
	size_t nstat_fds;
	size_t sweep_at; /* nstat_fds that calls for sweep_stat_fds */
	/* A batch's local iovecs, then its remote ones: kept, not on the
	 * stack, where two arrays of IOV_BATCH were 32 KiB that the calls
	 * below them pushed into fresh pages, a page fault each. */
	struct iovec *iov;
	size_t iov_cap;
};

static bool proc_alive(int pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d", pid);
	return access(path, F_OK) == 0;
}

static enum pyd_err errno_to_err(int e, int pid)
{
	if (e == ESRCH || !proc_alive(pid))
		return PYD_E_EXITED;
	if (e == EPERM || e == EACCES)
		return PYD_E_PERM;
	return PYD_E_READ;
}

static enum pyd_err read_mem_file(struct pyd_live *l, uint64_t addr, void *buf,
				  size_t len)
{
	if (l->mem_fd < 0) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/mem", l->pid);
		l->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (l->mem_fd < 0)
			return errno_to_err(errno, l->pid);
	}
	ssize_t n = pread(l->mem_fd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return PYD_OK;
	if (n == 0 && !proc_alive(l->pid))
		return PYD_E_EXITED;
	return n < 0 ? errno_to_err(errno, l->pid) : PYD_E_READ;
}

static enum pyd_err live_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct pyd_live *l = ctx;
	if (len == 0)
		return PYD_OK;
	if (l->use_vm) {
		struct iovec local = {buf, len};
		struct iovec remote = {(void *)(uintptr_t)addr, len};
		ssize_t n = process_vm_readv(l->pid, &local, 1, &remote, 1, 0);
		if (n == (ssize_t)len)
			return PYD_OK;
		if (n >= 0 || errno == EFAULT)
			return PYD_E_READ;
		/* Some kernels (or seccomp profiles) refuse the syscall but
		 * still let us read /proc/PID/mem. */
		if (errno != ENOSYS && errno != EPERM)
			return errno_to_err(errno, l->pid);
		l->use_vm = false;
	}
	return read_mem_file(l, addr, buf, len);
}

/* Ranges past the first that failed are not read: count whole ones. */
static size_t whole_ranges(const struct pyd_iov *v, size_t n, ssize_t got)
{
	size_t i = 0;
	for (; i < n && got >= (ssize_t)v[i].len; i++)
		got -= (ssize_t)v[i].len;
	return i;
}

static enum pyd_err live_readv(void *ctx, const struct pyd_iov *v, size_t n,
			       size_t *done)
{
	struct pyd_live *l = ctx;
	*done = 0;
	while (l->use_vm && *done < n) {
		size_t k = n - *done < IOV_BATCH ? n - *done : IOV_BATCH;
		if (!pyd_grow((void **)&l->iov, &l->iov_cap, 2 * k, sizeof *l->iov))
			break;
		struct iovec *local = l->iov, *remote = l->iov + k;
		for (size_t i = 0; i < k; i++) {
			const struct pyd_iov *r = &v[*done + i];
			local[i] = (struct iovec){r->buf, r->len};
			remote[i] = (struct iovec){(void *)(uintptr_t)r->addr,
						   r->len};
		}
		ssize_t got = process_vm_readv(l->pid, local, k, remote, k, 0);
		if (got < 0 && errno == ESRCH)
			return PYD_E_EXITED;
		if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
			l->use_vm = false;
			break;
		}
		size_t whole = whole_ranges(&v[*done], k, got < 0 ? 0 : got);
		*done += whole;
		if (whole < k)
			return PYD_OK;
	}
	/* Without process_vm_readv (or before we know it works, or without
	 * memory for a batch's iovecs): one by one, which also finds out. */
	enum pyd_err err = PYD_OK;
	for (; *done < n; ++*done)
		if ((err = live_read(l, v[*done].addr, v[*done].buf, v[*done].len)))
			break;
	return err == PYD_E_EXITED ? err : PYD_OK;
}

/* Stat files kept open before the first sweep. */
#define STAT_FDS_MIN 64

/* Close the stat files of threads that have exited (reading one fails):
 * a target that keeps starting threads must not make us hold a file for
 * every thread it ever had.  Called when the open ones have doubled since
 * the last sweep, so it costs a read per file now and then. */
static void sweep_stat_fds(struct pyd_live *l)
{
	char c;
	for (size_t i = 0; i < l->nstat_fds;) {
		if (pread(l->stat_fds[i].fd, &c, 1, 0) == 1) {
			i++;
			continue;
		}
		close(l->stat_fds[i].fd);
		l->stat_fds[i] = l->stat_fds[--l->nstat_fds];
	}
	l->sweep_at = 2 * l->nstat_fds > STAT_FDS_MIN ? 2 * l->nstat_fds
						      : STAT_FDS_MIN;
}

static int stat_fd(struct pyd_live *l, int64_t tid)
{
	for (size_t i = 0; i < l->nstat_fds; i++)
		if (l->stat_fds[i].tid == tid)
			return l->stat_fds[i].fd;
	if (l->nstat_fds >= l->sweep_at)
		sweep_stat_fds(l);
	char path[96];
	snprintf(path, sizeof path, "/proc/%d/task/%lld/stat", l->pid,
		 (long long)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p = fd >= 0 ? realloc(l->stat_fds,
				    (l->nstat_fds + 1) * sizeof *l->stat_fds)
			  : NULL;
	if (!p) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	l->stat_fds = p;
	l->stat_fds[l->nstat_fds++] = (struct stat_fd){tid, fd};
	return fd;
}

static void forget_stat_fd(struct pyd_live *l, int64_t tid)
{
	for (size_t i = 0; i < l->nstat_fds; i++) {
		if (l->stat_fds[i].tid != tid)
			continue;
		close(l->stat_fds[i].fd);
		l->stat_fds[i] = l->stat_fds[--l->nstat_fds];
		return;
	}
}

/* The state letter follows the last ')': the command name may hold
 * spaces and parentheses. */
static enum pyd_thread_run parse_run_state(const char *stat)
{
	const char *p = strrchr(stat, ')');
	if (!p || p[1] != ' ')
		return PYD_RUN_UNKNOWN;
	return p[2] == 'R' ? PYD_RUN_RUNNING : PYD_RUN_IDLE;
}

/* An open stat file re-read with pread: one syscall per thread and
 * sample. */
static enum pyd_err live_thread_run(void *ctx, int64_t tid,
				    enum pyd_thread_run *run)
{
	struct pyd_live *l = ctx;
	char stat[512];
	int fd = stat_fd(l, tid);
	ssize_t n = fd >= 0 ? pread(fd, stat, sizeof stat - 1, 0) : -1;
	if (n <= 0) {
		forget_stat_fd(l, tid);
		return proc_alive(l->pid) ? PYD_E_READ : PYD_E_EXITED;
	}
	stat[n] = 0;
	*run = parse_run_state(stat);
	return PYD_OK;
}

/* futex(2) operations a thread blocks in (FUTEX_PRIVATE_FLAG and
 * FUTEX_CLOCK_REALTIME masked off): WAIT, LOCK_PI, WAIT_BITSET,
 * WAIT_REQUEUE_PI, LOCK_PI2. */
static bool futex_blocks(unsigned long op)
{
	op &= 127;
	return op == 0 || op == 6 || op == 9 || op == 11 || op == 13;
}

/* /proc/TID/syscall: "NR ARG0 ARG1 ..." while in a system call. */
static enum pyd_err live_futex_wait(void *ctx, int64_t tid, uint64_t *addr)
{
	struct pyd_live *l = ctx;
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/task/%lld/syscall", l->pid,
		 (long long)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return PYD_E_READ;
	line[n] = 0;
	long nr;
	unsigned long long a0, a1;
	*addr = 0;
	if (sscanf(line, "%ld 0x%llx 0x%llx", &nr, &a0, &a1) == 3 &&
	    nr == pyd_arch_host()->futex_nr && futex_blocks(a1))
		*addr = a0;
	return PYD_OK;
}

static void free_maps(struct pyd_live *l)
{
	for (size_t i = 0; i < l->nmaps; i++)
		free(l->maps[i].path);
	free(l->maps);
	l->maps = NULL;
	l->nmaps = 0;
}

/* One number of a maps line, in base (16 or 10), ended by one of seps;
 * *p moves past it.  By hand: the kernel writes plain digits, and
 * strtoull's generality was most of a maps line's cost. */
static bool map_field(char **p, unsigned base, const char *seps,
		      unsigned long long *v)
{
	const char *s = *p;
	const unsigned long long most = base == 16 ? ~0ULL >> 4 : ~0ULL / 10;
	unsigned long long x = 0;
	for (;; s++) {
		unsigned d = *s >= '0' && *s <= '9'   ? (unsigned)(*s - '0')
			     : *s >= 'a' && *s <= 'f' ? (unsigned)(*s - 'a' + 10)
						      : 16;
		if (d >= base || x > most)
			break;
		x = x * base + d;
	}
	if (s == *p || !*s || !strchr(seps, *s))
		return false;
	*v = x;
	*p = (char *)s + 1;
	return true;
}

/* "start-end perms offset major:minor inode   path", field by field, as
 * sscanf's format parsing was a fifth of a plain dump's instructions (a
 * line of /proc/PID/maps each). */
static bool parse_map_line(char *line, struct pyd_mapping *m)
{
	unsigned long long start, end, off, major, minor, inode;
	char *p = line, *path;
	memset(m, 0, sizeof *m);
	if (!map_field(&p, 16, "-", &start) || !map_field(&p, 16, " ", &end))
		return false;
	size_t plen = strcspn(p, " ");
	if (plen == 0 || plen >= sizeof m->perms || p[plen] != ' ')
		return false;
	memcpy(m->perms, p, plen);
	p += plen + 1;
	if (!map_field(&p, 16, " ", &off) || !map_field(&p, 16, ":", &major) ||
	    !map_field(&p, 16, " ", &minor))
		return false;
	if (!map_field(&p, 10, " \n", &inode))
		return false;
	path = p;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev_major = (unsigned)major;
	m->dev_minor = (unsigned)minor;
	m->inode = inode;
	path += strspn(path, " ");
	path[strcspn(path, "\n")] = 0;
	if (*path)
		m->path = strdup(path);
	return true;
}

static enum pyd_err live_mappings(void *ctx, const struct pyd_mapping **maps,
				  size_t *n)
{
	struct pyd_live *l = ctx;
	if (!l->maps) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/maps", l->pid);
		FILE *f = fopen(path, "re");
		if (!f)
			return errno_to_err(errno, l->pid);
		/* stdio reads /proc files a KiB at a time (their st_blksize):
		 * the maps of a Python process are a dozen reads, not one. */
		char *buf = malloc(MAPS_BUF);
		if (buf)
			setvbuf(f, buf, _IOFBF, MAPS_BUF);
		char *line = NULL;
		size_t cap = 0, alloc = 0;
		while (getline(&line, &cap, f) > 0) {
			if (!pyd_grow_from((void **)&l->maps, &alloc,
					   l->nmaps + 1, sizeof *l->maps, 256))
				break;
			if (parse_map_line(line, &l->maps[l->nmaps]))
				l->nmaps++;
		}
		free(line);
		fclose(f);
		free(buf);
		if (l->nmaps == 0)
			return proc_alive(l->pid) ? PYD_E_PERM : PYD_E_EXITED;
	}
	*maps = l->maps;
	*n = l->nmaps;
	return PYD_OK;
}

/* Thread tid's name and run state, from one read of its stat file (its
 * name is there too, as in comm, between the first '(' and the last
 * ')'), at dir, the fd of /proc/PID/task; a thread we seized keeps the
 * run state it had then. */
static void task_stat(const struct pyd_live *l, int dir,
		      struct pyd_os_thread *th)
{
	char path[32], stat[512];
	snprintf(path, sizeof path, "%lld/stat", (long long)th->tid);
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
	if (fd >= 0)
		close(fd);
	stat[n > 0 ? n : 0] = 0;
	const char *from = strchr(stat, '('), *to = strrchr(stat, ')');
	th->name[0] = 0;
	if (from && to > from)
		snprintf(th->name, sizeof th->name, "%.*s", (int)(to - from - 1),
			 from + 1);
	th->run = parse_run_state(stat);
	for (size_t i = 0; i < l->npaused; i++)
		if (l->paused[i] == th->tid)
			th->run = l->paused_run[i];
}

static int cmp_thread(const void *a, const void *b)
{
	const struct pyd_os_thread *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static enum pyd_err live_threads(void *ctx, const struct pyd_os_thread **out,
				 size_t *n)
{
	struct pyd_live *l = ctx;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", l->pid);
	DIR *d = opendir(path);
	if (!d)
		return errno_to_err(errno, l->pid);
	size_t alloc = l->nthreads > 16 ? l->nthreads : 16;
	struct pyd_os_thread *t = malloc(alloc * sizeof *t);
	size_t count = 0;
	struct dirent *e;
	while (t && (e = readdir(d)) && count < LIVE_MAX_THREADS) {
		long tid = strtol(e->d_name, NULL, 10);
		if (tid <= 0)
			continue;
		if (count == alloc) {
			void *p = realloc(t, (alloc *= 2) * sizeof *t);
			if (!p)
				break;
			t = p;
		}
		struct pyd_os_thread *th = &t[count++];
		th->tid = tid;
		task_stat(l, dirfd(d), th);
	}
	closedir(d);
	if (!t)
		return PYD_E_NOMEM;
	qsort(t, count, sizeof *t, cmp_thread);
	free(l->threads);
	l->threads = t;
	l->nthreads = count;
	*out = t;
	*n = count;
	return PYD_OK;
}

/* Open path if it is the mapped file (same inode). */
static int open_if_inode(const char *path, uint64_t inode)
{
	struct stat st;
	int fd = pyd_open_regular(path);
	if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_ino != inode)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * The path in /proc/PID/maps is relative to the reader's root when the
 * target was merely chrooted, but to the target's own root when it lives
 * in another mount namespace (a container): try the target's root first,
 * then the path as it stands, each checked against the mapping's inode.
 * map_files/ opens exactly the mapped file (even a deleted one) but needs
 * CAP_SYS_ADMIN, so it is the last resort.
 */
static int live_open_file(void *ctx, const struct pyd_mapping *m, char *used,
			  size_t usedsz)
{
	struct pyd_live *l = ctx;
	char path[4200];
	if (!m->path)
		return -1;
	snprintf(path, sizeof path, "%s%s", l->root, m->path);
	int fd = open_if_inode(path, m->inode);
	if (fd < 0)
		fd = open_if_inode(m->path, m->inode);
	if (fd < 0) {
		snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", l->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0)
		snprintf(used, usedsz, "%s", m->path);
	return fd;
}

/* A paused thread's registers (it must be in its ptrace stop). */
static enum pyd_err live_regs(void *ctx, int64_t tid, uint64_t *regs)
{
	struct pyd_live *l = ctx;
	/* NT_PRSTATUS's regset is the user registers on every architecture */
	struct iovec io = {regs, PYD_MAX_USER_WORDS * sizeof *regs};
	bool ours = false;
	for (size_t i = 0; i < l->npaused && !ours; i++)
		ours = l->paused[i] == tid;
	if (!ours || ptrace(PTRACE_GETREGSET, (pid_t)tid, NT_PRSTATUS, &io) != 0)
		return PYD_E_READ;
	return PYD_OK;
}

/* What /proc/PID/stat says of a process that we use. */
struct proc_stat {
	char state;
	int ppid;
	unsigned long flags;
};

/* pid's stat; false if it is gone.  "PID (COMM) STATE PPID PGRP SESSION
 * TTY TPGID FLAGS ...": COMM may hold anything, so the fields count from
 * its last ')'. */
static bool read_proc_stat(int pid, struct proc_stat *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %c %d %*d %*d %*d %*d %lu", &st->state,
			   &st->ppid, &st->flags) == 3;
}

int pyd_live_parent(int pid)
{
	struct proc_stat st;
	return read_proc_stat(pid, &st) ? st.ppid : -1;
}

/* Most processes we look through for descendants. */
#define MAX_PROCS 65536

/* The family by a look at every process's parent: for kernels without
 * the children files (CONFIG_PROC_CHILDREN). */
static enum pyd_err family_by_scan(int pid, struct pyd_proc **out, size_t *n)
{
	struct pyd_proc *all = calloc(MAX_PROCS, sizeof *all);
	size_t nall = 0;
	*out = NULL;
	*n = 0;
	DIR *d = opendir("/proc");
	if (!all || !d) {
		free(all);
		if (d)
			closedir(d);
		return all ? PYD_E_READ : PYD_E_NOMEM;
	}
	struct dirent *e;
	while ((e = readdir(d)) && nall < MAX_PROCS) {
		char *end;
		long p = strtol(e->d_name, &end, 10);
		int ppid;
		if (*end || p <= 0 || (ppid = pyd_live_parent((int)p)) < 0)
			continue;
		all[nall++] = (struct pyd_proc){(int)p, ppid};
	}
	closedir(d);
	/* Depth first from the root, children in pid order: a stack of
	 * processes still to list, each pushed once (a pid has one
	 * parent, and the root is never pushed again). */
	struct pyd_proc *fam = calloc(nall + 1, sizeof *fam);
	struct pyd_proc *stack = calloc(nall + 1, sizeof *stack);
	if (!fam || !stack) {
		free(all);
		free(fam);
		free(stack);
		return PYD_E_NOMEM;
	}
	size_t k = 0, top = 0;
	stack[top++] = (struct pyd_proc){pid, pyd_live_parent(pid)};
	while (top && k <= nall) {
		struct pyd_proc p = stack[--top];
		fam[k++] = p;
		for (size_t j = nall; j-- > 0;)
			if (all[j].ppid == p.pid && all[j].pid != pid &&
			    top <= nall)
				stack[top++] = all[j];
	}
	free(stack);
	free(all);
	*out = fam;
	*n = k;
	return PYD_OK;
}

static int cmp_pid(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* pid's children, in pid order, from each of its threads' children file
 * (a child is listed under the thread that made it); malloc'd. */
static int *children_of(int pid, size_t *n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	int *kids = NULL;
	size_t cap = 0;
	*n = 0;
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", pid,
		         e->d_name);
		FILE *f = fopen(path, "re");
		int kid;
		while (f && fscanf(f, "%d", &kid) == 1 &&
		       pyd_grow((void **)&kids, &cap, *n + 1, sizeof *kids))
			kids[(*n)++] = kid;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(kids, *n, sizeof *kids, cmp_pid);
	return kids;
}

/* Depth first from pid through the children files, parents before their
 * children, children in pid order. */
static enum pyd_err family_by_children(int pid, struct pyd_proc **out,
                                       size_t *n)
{
	struct pyd_proc *fam = NULL, *stack = NULL;
	size_t nfam = 0, famcap = 0, top = 0, stackcap = 0;
	enum pyd_err err = PYD_OK;
	if (!pyd_grow((void **)&stack, &stackcap, 1, sizeof *stack))
		return PYD_E_NOMEM;
	stack[top++] = (struct pyd_proc){pid, pyd_live_parent(pid)};
	while (top && nfam < MAX_PROCS) {
		struct pyd_proc p = stack[--top];
		if (!pyd_grow((void **)&fam, &famcap, nfam + 1, sizeof *fam)) {
			err = PYD_E_NOMEM;
			break;
		}
		fam[nfam++] = p;
		size_t nk;
		int *kids = children_of(p.pid, &nk);
		if (!pyd_grow((void **)&stack, &stackcap, top + nk, sizeof *stack))
			err = PYD_E_NOMEM;
		for (size_t j = nk; !err && j-- > 0;)
			stack[top++] = (struct pyd_proc){kids[j], p.pid};
		free(kids);
		if (err)
			break;
	}
	free(stack);
	if (err) {
		free(fam);
		return err;
	}
	*out = fam;
	*n = nfam;
	return PYD_OK;
}

enum pyd_err pyd_live_family(int pid, struct pyd_proc **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (access("/proc/thread-self/children", R_OK) != 0)
		return family_by_scan(pid, out, n);
	return family_by_children(pid, out, n);
}

/* The number /proc/PID/status gives after key ("Tgid:"), or dflt if it
 * gives none. */
static int status_field(int pid, const char *key, int dflt)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	int v = dflt;
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, klen) && sscanf(line + klen, "%d", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

int pyd_live_tgid(int tid)
{
	int tgid = status_field(tid, "Tgid:", tid);
	return tgid > 0 ? tgid : tid;
}

void pyd_live_cmdline(int pid, char *out, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
	out[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f || size < 2) {
		if (f)
			fclose(f);
		return;
	}
	size_t n = fread(out, 1, size - 1, f);
	fclose(f);
	while (n && !out[n - 1])
		n--;
	for (size_t i = 0; i < n; i++)
		if (!out[i])
			out[i] = ' ';
	out[n] = 0;
}

/* PF_KTHREAD, the stat flag of a kernel thread (include/linux/sched.h). */
#define PF_KTHREAD 0x00200000u

const char *pyd_live_oddity(int pid, enum pyd_err *err)
{
	struct proc_stat st;
	if (!read_proc_stat(pid, &st))
		return NULL;
	if (st.state == 'Z' || st.state == 'X') {
		*err = PYD_E_NOPROC;
		return "a zombie: it has exited and waits for its parent to "
		       "collect its status";
	}
	if (st.flags & PF_KTHREAD) {
		*err = PYD_E_NOTPYTHON;
		return "a kernel thread, not a program";
	}
	return NULL;
}

enum pyd_err pyd_live_open(int pid, struct pyd_live **out)
{
	if (pid <= 0 || !proc_alive(pid))
		return PYD_E_NOPROC;
	struct pyd_live *l = calloc(1, sizeof *l);
	if (!l)
		return PYD_E_NOMEM;
	l->pid = pid;
	l->mem_fd = -1;
	l->sweep_at = STAT_FDS_MIN;
	l->use_vm = true;
	snprintf(l->root, sizeof l->root, "/proc/%d/root", pid);
	l->src = (struct pyd_memsrc){
		.ctx = l,
		.read = live_read,
		.mappings = live_mappings,
		.threads = live_threads,
		.readv = live_readv,
		.thread_run = live_thread_run,
		.open_file = live_open_file,
		.regs = live_regs,
		.futex_wait = live_futex_wait,
	};
	*out = l;
	/* Reading the maps needs the same permission as reading memory
	 * (PTRACE_MODE_READ), so it tells us early whether we may. */
	const struct pyd_mapping *maps;
	size_t n;
	enum pyd_err err = live_mappings(l, &maps, &n);
	if (err == PYD_E_EXITED)
		err = PYD_E_NOPROC;
	return err;
}

const struct pyd_memsrc *pyd_live_memsrc(struct pyd_live *l)
{
	return &l->src;
}

static bool seize_one(struct pyd_live *l, pid_t tid, enum pyd_thread_run run)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
		return false;
	l->paused_run[l->npaused] = run;
	l->paused[l->npaused++] = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0)
		return false;
	int status;
	return waitpid(tid, &status, __WALL) == tid;
}

/* The process tracing pid (its TracerPid), 0 if none or unknown; its
 * name into comm. */
static int tracer_of(int pid, char *comm, size_t commsz)
{
	char path[64];
	int tracer = status_field(pid, "TracerPid:", 0);
	FILE *f;
	snprintf(comm, commsz, "?");
	snprintf(path, sizeof path, "/proc/%d/comm", tracer);
	if (tracer > 0 && (f = fopen(path, "re"))) {
		if (fgets(comm, (int)commsz, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	return tracer;
}

/* Why a thread of l could not be seized (errno e), into detail. */
static void seize_failed(struct pyd_live *l, int e, char *detail,
			 size_t detailsz)
{
	char comm[64];
	int tracer;
	/* qemu-user emulates no ptrace: it answers ENOSYS itself */
	if (e == ENOSYS)
		snprintf(detail, detailsz,
			 "threads cannot be paused: ptrace is not "
			 "implemented here (ENOSYS; so it is under qemu "
			 "user-mode emulation), and --locked and --native "
			 "need it; run without them");
	/* Root or not, a process has one tracer at most. */
	else if (e == EPERM &&
		 (tracer = tracer_of(l->pid, comm, sizeof comm)) > 0)
		snprintf(detail, detailsz,
			 "as process %d (%s) traces it already: a process "
			 "has one tracer at most, and --locked and --native "
			 "need to be it. Detach the other (quit strace or "
			 "gdb), or dump without --locked and --native",
			 tracer, comm);
}

enum pyd_err pyd_live_pause(struct pyd_live *l, char *detail, size_t detailsz)
{
	const struct pyd_os_thread *t;
	size_t n;
	enum pyd_err err = live_threads(l, &t, &n);
	if (err)
		return err;
	l->paused = calloc(n ? n : 1, sizeof *l->paused);
	l->paused_run = calloc(n ? n : 1, sizeof *l->paused_run);
	if (!l->paused || !l->paused_run) {
		pyd_live_resume(l);
		return PYD_E_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (seize_one(l, (pid_t)t[i].tid, t[i].run))
			continue;
		int e = errno;
		/* A thread that ended between listing and seizing is fine. */
		if (e == ESRCH && proc_alive(l->pid))
			continue;
		pyd_live_resume(l);
		seize_failed(l, e, detail, detailsz);
		return errno_to_err(e, l->pid);
	}
	return PYD_OK;
}

void pyd_live_resume(struct pyd_live *l)
{
	for (size_t i = 0; i < l->npaused; i++)
		ptrace(PTRACE_DETACH, (pid_t)l->paused[i], 0, 0);
	free(l->paused);
	free(l->paused_run);
	l->paused = NULL;
	l->paused_run = NULL;
	l->npaused = 0;
}

void pyd_live_close(struct pyd_live *l)
{
	if (!l)
		return;
	pyd_live_resume(l);
	free_maps(l);
	free(l->threads);
	free(l->iov);
	while (l->nstat_fds)
		forget_stat_fd(l, l->stat_fds[0].tid);
	free(l->stat_fds);
	if (l->mem_fd >= 0)
		close(l->mem_fd);
	free(l);
}
