/*
 * Memory source for a live process on Linux: process_vm_readv, falling back
 * to /proc/PID/mem; mappings from /proc/PID/maps; threads from
 * /proc/PID/task.  Also the optional "pause everything while we read"
 * (--locked) via PTRACE_SEIZE + PTRACE_INTERRUPT.
 */
#ifndef PYD_MEMSRC_LIVE_H
#define PYD_MEMSRC_LIVE_H

#include "memsrc.h"

struct pyd_live;

/* PYD_E_NOPROC, PYD_E_PERM or PYD_OK. */
enum pyd_err pyd_live_open(int pid, struct pyd_live **out);

/* A process and its parent. */
struct pyd_proc {
	int pid, ppid;
};

/* pid and every process descended from it (its children, theirs ...),
 * depth first, parents before their children; malloc'd. */
enum pyd_err pyd_live_family(int pid, struct pyd_proc **out, size_t *n);

/* The parent of pid; -1 if it is gone. */
int pyd_live_parent(int pid);

/* pid's command line, its arguments joined by blanks ("" if gone). */
void pyd_live_cmdline(int pid, char *out, size_t size);
/* The process that thread id tid belongs to (its Tgid; tid itself for a
 * process's first thread, or where /proc does not say). */
int pyd_live_tgid(int tid);

/* Why pid cannot be a Python process to read, whatever the permissions:
 * "a zombie: ..." (*err PYD_E_NOPROC) or "a kernel thread ..."
 * (PYD_E_NOTPYTHON); NULL for an ordinary process. */
const char *pyd_live_oddity(int pid, enum pyd_err *err);
const struct pyd_memsrc *pyd_live_memsrc(struct pyd_live *live);
/* Stop every thread of the target; pyd_live_resume() (or our death)
 * lets them go again.  Where ptrace itself is missing, detail says so. */
enum pyd_err pyd_live_pause(struct pyd_live *live, char *detail, size_t detailsz);
void pyd_live_resume(struct pyd_live *live);
void pyd_live_close(struct pyd_live *live);

#endif
