/*
 * What differs between the architectures pystack-dump reads (x86-64 and
 * arm64, both LP64 little-endian Linux, so CPython's own layouts are the
 * same): their registers, glibc's struct pthread and the core's ELF
 * machine. One row of data per architecture (arch.c), chosen from the
 * target -- a core's e_machine, a snapshot's name, the host for a live
 * process -- never by an #ifdef in the readers.
 */
#ifndef PYD_MEMSRC_ARCH_H
#define PYD_MEMSRC_ARCH_H

#include <stdint.h>

/* Most DWARF registers an unwind starts from (arm64: x0-x30, sp). */
#define PYD_MAX_REGS 32
/* Most words of the kernel's user registers (arm64's user_pt_regs: 34). */
#define PYD_MAX_USER_WORDS 34

struct pyd_arch {
	const char *name;      /* uname's machine: "x86_64", "aarch64" */
	const char *label;     /* for people: "x86-64", "arm64" */
	uint16_t e_machine;    /* ELF e_machine of its cores */
	/* The kernel's user registers: ptrace's NT_PRSTATUS regset and a
	 * core's NT_PRSTATUS pr_reg, as words. */
	uint8_t user_words;
	/* DWARF registers 0..nregs-1 given to libdwfl, each the word
	 * user_of_dwarf[i] of the user registers, and the word holding the
	 * pc (set apart: arm64's DWARF has no pc column). */
	uint8_t nregs;
	uint8_t user_of_dwarf[PYD_MAX_REGS];
	uint8_t user_pc;
	/* glibc's offsetof(struct pthread, tid): pthread_self() points at
	 * that struct, the only thread id a thread state has before 3.8. */
	uint32_t pthread_tid;
	/* sizeof(pthread_mutex_t) past x86-64's 40 bytes: the built-in
	 * layouts are x86-64's, and CPython embeds a few mutexes
	 * (py_layout_for_arch). */
	uint8_t mutex_extra;
	/* futex(2)'s system call number (/proc/TID/syscall's first field
	 * for a thread blocked on a lock or condition variable) */
	uint16_t futex_nr;
	/* DWARF numbers of the frame pointer and the stack pointer: a frame
	 * record ([fp] the caller's fp, [fp + 8] the return address) is
	 * where code without CFI is unwound from */
	uint8_t fp_dwarf, sp_dwarf;
};

/* The row for an ELF machine, an architecture's name; NULL if unknown. */
const struct pyd_arch *pyd_arch_by_machine(unsigned e_machine);
const struct pyd_arch *pyd_arch_by_name(const char *name);
/* The machine this process runs on (uname): a live target's. */
const struct pyd_arch *pyd_arch_host(void);
/* "x86-64 and arm64", for messages. */
const char *pyd_arch_labels(void);

#endif
