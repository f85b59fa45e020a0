/*
 * The code-object cache (code.c): code objects by address, their lines,
 * and the frames pushed from them.
 */
#ifndef PYD_CODE_H
#define PYD_CODE_H

#include "session.h"

/* The code object at addr, decoded and cached; NULL if it is not one. */
const struct pyd_code *pyd_code_get(struct pyd_session *s, uint64_t addr);

/* Append the frame of code object c at line; false if out of memory. */
bool pyd_frame_push(struct pyd_frame_buf *b, const struct pyd_code *c,
		    int line);

/* co_flags of generators', coroutines' and async generators' code
 * (CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR: the same bits in
 * 3.6-3.15). */
#define PYD_CO_GENERATOR_KINDS (0x20u | 0x80u | 0x200u)

/* Byte offset of a frame object's f_lasti (<= 3.10): 3.10 counts it in
 * 2-byte code units; negative is "not started", left as it is. */
static inline int64_t pyd_lasti_offset(const struct py_layout *L,
				       int32_t lasti)
{
	return L->line_model == PY_LINES_310 && lasti >= 0 ? 2 * (int64_t)lasti
							   : lasti;
}

/* Byte offset of instruction pointer instr into the bytecode of the code
 * object at code (3.11+): its inline bytecode, or in free-threaded 3.14+
 * the copy of it that the frame's thread runs (see struct pyd_code's
 * tlbc).  An instr in neither gives an offset outside the code. */
int64_t pyd_code_offset(struct pyd_session *s, uint64_t code, uint64_t instr);

/* The code object at code, as pyd_code_get, and the offset of instr in
 * it, as pyd_code_offset, into *off: one look-up for both. */
const struct pyd_code *pyd_code_get_at(struct pyd_session *s, uint64_t code,
				       uint64_t instr, int64_t *off);

/*
 * Append the frame running the code object at code, at bytecode offset
 * off (bytes); an offset outside the code gives line -1.  PYD_E_READ if
 * code is not a code object.
 */
enum pyd_err pyd_frame_push_at(struct pyd_session *s, struct pyd_frame_buf *b,
			       uint64_t code, int64_t off);

/*
 * The same for an interpreter frame (3.11+), its code object and offset
 * from pyd_code_get_at, strictly: PYD_E_READ if c is NULL or the offset
 * is not inside the code, which is how a frame torn under a live read
 * shows.
 */
enum pyd_err pyd_frame_push_iframe(struct pyd_session *s,
				   struct pyd_frame_buf *b,
				   const struct pyd_code *c, int64_t off);

/* Line of a code object at a bytecode offset (in bytes). */
int pyd_code_line(const struct pyd_session *s, const struct pyd_code *c,
		  int offset);
/* The same through the session's line cache. */
int pyd_code_line_cached(struct pyd_session *s, const struct pyd_code *c,
			 int offset);

/*
 * Checking the cache.  CPython frees code objects (an exec'd string, a
 * reloaded module, the imports of a program starting up) and another may
 * take the address -- and the addresses of its name, file and line table,
 * freed with it -- so a sampler re-reads, now and then, the headers of
 * the code objects its stacks used and the starts of their name and
 * file: pyd_code_take_used() swaps the ones looked up since its last call
 * into *v (the array given in *v becomes the session's);
 * pyd_code_check_reads() says what to read for each, at which offset of
 * its pyd_code_check_size() bytes in hdrs; pyd_code_recheck() drops those
 * of the first n whose bytes read now into hdrs[i * size] no longer
 * match, so that their address is decoded afresh.  It frees them: frames
 * pushed from them must be gone, and anything that knew them by their
 * strings' addresses must forget them (pyd_profile_forget_strings).
 * Returns how many it dropped.
 */
#define PYD_CODE_CHECK_READS 3
struct pyd_code_read {
	uint64_t addr;
	size_t off, len;
};
size_t pyd_code_check_size(const struct py_layout *L);
void pyd_code_check_reads(const struct pyd_session *s,
			  const struct pyd_code *c,
			  struct pyd_code_read r[PYD_CODE_CHECK_READS]);
size_t pyd_code_take_used(struct pyd_session *s, struct pyd_code ***v,
			  size_t *cap);
size_t pyd_code_recheck(struct pyd_session *s, struct pyd_code *const *v,
			size_t n, const uint8_t *hdrs);

#endif
