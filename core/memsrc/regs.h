/*
 * x86-64 registers for native unwinding: the kernel's struct
 * user_regs_struct (ptrace's PTRACE_GETREGS, a core's NT_PRSTATUS
 * pr_reg) to the DWARF register numbers libdwfl wants (rax, rdx, rcx,
 * rbx, rsi, rdi, rbp, rsp, r8-r15, rip).
 */
#ifndef PYD_MEMSRC_REGS_H
#define PYD_MEMSRC_REGS_H

#include <stdint.h>
#include <string.h>

#define PYD_NREGS 17
/* sizeof(struct user_regs_struct) on x86-64: 27 words. */
#define PYD_USER_REGS_SIZE (27 * 8)

/* The word index in user_regs_struct of each DWARF register. */
static const uint8_t pyd_user_reg_of_dwarf[PYD_NREGS] = {
	10 /* rax */, 12 /* rdx */, 11 /* rcx */, 5 /* rbx */,
	13 /* rsi */, 14 /* rdi */, 4 /* rbp */,  19 /* rsp */,
	9 /* r8 */,   8 /* r9 */,   7 /* r10 */,  6 /* r11 */,
	3 /* r12 */,  2 /* r13 */,  1 /* r14 */,  0 /* r15 */,
	16 /* rip */,
};

static inline void pyd_regs_from_user(const void *user, uint64_t *dwarf)
{
	for (int i = 0; i < PYD_NREGS; i++)
		memcpy(&dwarf[i], (const uint8_t *)user + 8 * pyd_user_reg_of_dwarf[i],
		       8);
}

#endif
