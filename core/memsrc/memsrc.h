/*
 * A memory source: where the bytes of a target process come from.
 *
 * This is the one seam every frontend plugs into.  A live process, an ELF
 * core, gdb, lldb and snapshot files each implement it; the decoders only
 * ever call through it, so they never see /proc, ptrace or a debugger API.
 * Everything but read() is optional: leave it NULL if the source cannot
 * answer.
 */
#ifndef PYD_MEMSRC_H
#define PYD_MEMSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../pyd_error.h"
#include "arch.h"

struct pyd_mapping {
	uint64_t start, end, offset;
	uint64_t inode;
	unsigned dev_major, dev_minor;
	char perms[5];
	char *path; /* NULL for anonymous mappings */
};

enum pyd_thread_run {
	PYD_RUN_UNKNOWN,
	PYD_RUN_RUNNING, /* on a CPU or runnable */
	PYD_RUN_IDLE,    /* sleeping, waiting, stopped */
};

struct pyd_os_thread {
	int64_t tid;
	char name[32];
	enum pyd_thread_run run;
};

/* One range of a batched read. */
struct pyd_iov {
	uint64_t addr;
	void *buf;
	size_t len;
};

struct pyd_memsrc {
	void *ctx;
	/* Copy len bytes at addr into buf: PYD_OK, or PYD_E_READ for an
	 * unmapped address, PYD_E_EXITED if the process is gone. */
	enum pyd_err (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	/* The target's mappings; the array is owned by the source. */
	enum pyd_err (*mappings)(void *ctx, const struct pyd_mapping **maps,
				 size_t *n);
	/* The target's OS threads; owned by the source, refreshed per call. */
	enum pyd_err (*threads)(void *ctx, const struct pyd_os_thread **threads,
				size_t *n);
	/* Resolve a symbol of the Python binary to a runtime address, for
	 * sources that know symbols themselves (lldb). */
	enum pyd_err (*symbol)(void *ctx, const char *name, uint64_t *addr);
	/* Open the file behind a mapping read-only (an fd the caller
	 * closes), copying the path actually opened into used; -1 if it
	 * cannot be found.  Only the source knows where the target's files
	 * are: behind /proc/PID/root, or next to a core on another machine. */
	int (*open_file)(void *ctx, const struct pyd_mapping *m, char *used,
			 size_t usedsz);
	/* Read n ranges in one go (one syscall for a live process): *done
	 * tells how many leading ranges were read whole.  PYD_E_EXITED if
	 * the process is gone.  Sources without it get pyd_readv's loop. */
	enum pyd_err (*readv)(void *ctx, const struct pyd_iov *v, size_t n,
			      size_t *done);
	/* Whether thread tid is on a CPU (or runnable) right now; cheap
	 * enough to ask every sample.  PYD_E_READ if the thread is gone. */
	enum pyd_err (*thread_run)(void *ctx, int64_t tid,
				   enum pyd_thread_run *run);
	/* Thread tid's registers, for native unwinding: the kernel's user
	 * registers as PYD_MAX_USER_WORDS words (arch.h says which is
	 * which), from a core's NT_PRSTATUS or a paused live thread.
	 * PYD_E_READ if unknown. */
	enum pyd_err (*regs)(void *ctx, int64_t tid, uint64_t *regs);
	/* The address thread tid is blocked on in futex(2) now (a lock or a
	 * condition variable: a GIL waiter's is the GIL's); 0 if it is not
	 * blocked so.  PYD_E_READ if unknown. */
	enum pyd_err (*futex_wait)(void *ctx, int64_t tid, uint64_t *addr);
	/* The target's architecture; NULL: the host's. */
	const struct pyd_arch *arch;
};

static inline const struct pyd_arch *pyd_memsrc_arch(const struct pyd_memsrc *src)
{
	return src->arch ? src->arch : pyd_arch_host();
}

static inline enum pyd_err pyd_read(const struct pyd_memsrc *src,
				    uint64_t addr, void *buf, size_t len)
{
	return src->read(src->ctx, addr, buf, len);
}

/* The 64-bit little-endian word at buf + off of bytes copied out of the
 * target: memcpy, since target structs need not be aligned in our copy. */
static inline uint64_t pyd_u64_at(const void *buf, uint64_t off)
{
	uint64_t v;
	memcpy(&v, (const uint8_t *)buf + off, sizeof v);
	return v;
}

static inline enum pyd_err pyd_readv(const struct pyd_memsrc *src,
				     const struct pyd_iov *v, size_t n,
				     size_t *done)
{
	if (src->readv)
		return src->readv(src->ctx, v, n, done);
	enum pyd_err err = PYD_OK;
	for (*done = 0; *done < n; ++*done)
		if ((err = pyd_read(src, v[*done].addr, v[*done].buf,
				    v[*done].len)))
			break;
	return err == PYD_E_EXITED ? err : PYD_OK;
}

/* Looks at n bytes read from addr: the address of what it looks for,
 * or 0 to go on. */
typedef uint64_t pyd_scan_fn(const uint8_t *buf, size_t n, uint64_t addr,
                             void *ctx);

/* Scan [start, end) of src -- at most max bytes of it, pages that cannot
 * be read skipped -- with look, chunk by chunk: what look found, or 0.
 * Safe for any range, however corrupt (an end below start, near 2^64). */
uint64_t pyd_scan(const struct pyd_memsrc *src, uint64_t start, uint64_t end,
                  uint64_t max, pyd_scan_fn *look, void *ctx);

/* path opened for reading if it is a regular file, never blocking on
 * one that is not (a FIFO, a device, a socket): files users and targets
 * name may be anything.  -1 with errno set otherwise (EINVAL: not a
 * regular file; EISDIR: a directory). */
int pyd_open_regular(const char *path);
/* path as a target names it, opened under sysroot (NULL or "": as it is)
 * unless already there; the path opened into used. */
int pyd_open_under(const char *sysroot, const char *path, char *used,
                   size_t usedsz);

#endif
