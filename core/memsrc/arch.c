/*
 * The architectures' rows (arch.h).
 */
#include "arch.h"

#include <elf.h>
#include <stddef.h>
#include <string.h>
#include <sys/utsname.h>

static const struct pyd_arch arches[] = {
	{
		.name = "x86_64",
		.label = "x86-64",
		.e_machine = EM_X86_64,
		/* struct user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10
		 * r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss
		 * fs_base gs_base ds es fs gs */
		.user_words = 27,
		/* DWARF: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
		.nregs = 17,
		.user_of_dwarf = {10, 12, 11, 5, 13, 14, 4, 19,
				  9, 8, 7, 6, 3, 2, 1, 0, 16},
		.user_pc = 16,
		.pthread_tid = 0x2d0,
		.mutex_extra = 0,
		.futex_nr = 202,
		.fp_dwarf = 6,
		.sp_dwarf = 7,
	},
	{
		.name = "aarch64",
		.label = "arm64",
		.e_machine = EM_AARCH64,
		/* struct user_pt_regs: x0-x30 sp pc pstate */
		.user_words = 34,
		/* DWARF: x0-x30 sp, in the same order */
		.nregs = 32,
		.user_of_dwarf = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
				  11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
				  22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
		.user_pc = 32,
		/* measured: glibc 2.36 (Debian 12) under qemu */
		.pthread_tid = 0xd0,
		.mutex_extra = 8,
		.futex_nr = 98,
		.fp_dwarf = 29,
		.sp_dwarf = 31,
	},
};
#define NARCHES (sizeof arches / sizeof arches[0])

const struct pyd_arch *pyd_arch_by_machine(unsigned e_machine)
{
	for (size_t i = 0; i < NARCHES; i++)
		if (arches[i].e_machine == e_machine)
			return &arches[i];
	return NULL;
}

const struct pyd_arch *pyd_arch_by_name(const char *name)
{
	for (size_t i = 0; i < NARCHES; i++)
		if (strcmp(arches[i].name, name) == 0)
			return &arches[i];
	return NULL;
}

const struct pyd_arch *pyd_arch_host(void)
{
	static const struct pyd_arch *host;
	struct utsname u;
	if (!host && uname(&u) == 0)
		host = pyd_arch_by_name(u.machine);
	return host ? host : &arches[0];
}

const char *pyd_arch_labels(void)
{
	return "x86-64 and arm64";
}
