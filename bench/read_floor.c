/* The floor of a sampler that reads the stack once a sample, measured with
 * the sampler's own reads: LD_PRELOAD'd into `pystack-dump sample` by
 * bench/bench_sample.py, it lets the first PYD_FLOOR_AT - 1 calls of
 * process_vm_readv through, then repeats the PYD_FLOOR_AT-th (the same
 * iovecs, the same target) for PYD_FLOOR_SECS seconds with nothing between,
 * and writes "CALLS SECONDS" to PYD_FLOOR_OUT.  Those calls per second are
 * the rate of a sampler that decodes and records nothing: no sampler of one
 * read a sample passes it on this machine.  Measured in place because the
 * kernel's share in getrusage() misses what it charges to the return to
 * user space (under a hypervisor, most of a short call's cost). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void measure(pid_t pid, const struct iovec *local, unsigned long nlocal,
                    const struct iovec *remote, unsigned long nremote)
{
	const char *out = getenv("PYD_FLOOR_OUT");
	const char *secs_env = getenv("PYD_FLOOR_SECS");
	double secs = secs_env ? atof(secs_env) : 2.0;
	double start = now(), end = start;
	long calls = 0;
	/* The clock is read once every 1,000 calls, so that it costs the
	 * floor next to nothing. */
	while (end - start < secs) {
		for (int i = 0; i < 1000; i++)
			syscall(SYS_process_vm_readv, pid, local, nlocal, remote,
			        nremote, 0UL);
		calls += 1000;
		end = now();
	}
	FILE *f = out ? fopen(out, "w") : NULL;
	if (f) {
		fprintf(f, "%ld %.6f\n", calls, end - start);
		fclose(f);
	}
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local,
                         unsigned long nlocal, const struct iovec *remote,
                         unsigned long nremote, unsigned long flags)
{
	static long seen;
	const char *at = getenv("PYD_FLOOR_AT");
	if (++seen == (at ? atol(at) : 2000))
		measure(pid, local, nlocal, remote, nremote);
	return syscall(SYS_process_vm_readv, pid, local, nlocal, remote,
	               nremote, flags);
}
