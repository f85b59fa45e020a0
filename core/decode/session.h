/*
 * Internals shared by the decoders: the session, bounded readers for the
 * CPython objects every decoder needs (str, bytes, code), and their caches.
 */
#ifndef PYD_SESSION_H
#define PYD_SESSION_H

#include "../cpython/layout.h"
#include "../pyd.h"

/* What we keep of a code object; immutable in CPython, so cacheable. */
struct pyd_code {
	uint64_t addr;
	char *name, *qualname, *file;
	int firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
};

struct pyd_session {
	const struct pyd_memsrc *src;
	struct pyd_runtime rt;
	struct py_layout layout;
	const char *layout_source;
	char version[32];
	uint64_t code_type; /* address of PyCode_Type once seen */
	/* Open-addressing table of code objects by address. */
	struct pyd_code **codes;
	size_t ncodes, codes_cap;
};

enum pyd_err pyd_read_ptr(struct pyd_session *s, uint64_t addr, uint64_t *out);
enum pyd_err pyd_read_i32(struct pyd_session *s, uint64_t addr, int32_t *out);

/* A str object as UTF-8 (malloc'd); NULL on a bad read or not a str. */
char *pyd_read_str(struct pyd_session *s, uint64_t addr);

/* The code object at addr, decoded and cached; NULL if it is not one. */
const struct pyd_code *pyd_code_get(struct pyd_session *s, uint64_t addr);

/* A growable array of frames; the decoders' common output. */
struct pyd_frame_buf {
	struct pyd_frame *v;
	size_t n, cap;
};

/* Append the frame of code object c at line; false if out of memory. */
bool pyd_frame_push(struct pyd_frame_buf *b, const struct pyd_code *c,
		    int line);

/* Byte offset of instruction pointer instr into the inline bytecode of
 * the code object at code (3.11+). */
static inline int64_t pyd_iframe_offset(const struct py_layout *L,
					uint64_t code, uint64_t instr)
{
	return (int64_t)(instr - (code + (uint64_t)L->code.code_adaptive));
}

/*
 * Append the frame running the code object at code, at bytecode offset
 * off (bytes); an offset outside the code gives line -1.  PYD_E_READ if
 * code is not a code object.
 */
enum pyd_err pyd_frame_push_at(struct pyd_session *s, struct pyd_frame_buf *b,
			       uint64_t code, int64_t off);

/*
 * The same for an interpreter frame (3.11+) at instruction pointer
 * instr, strictly: PYD_E_READ if instr is not inside the code, which is
 * how a frame torn under a live read shows.
 */
enum pyd_err pyd_frame_push_iframe(struct pyd_session *s,
				   struct pyd_frame_buf *b, uint64_t code,
				   uint64_t instr);

/* Line of a code object at a bytecode offset (in bytes). */
int pyd_code_line(const struct pyd_session *s, const struct pyd_code *c,
		  int offset);

#endif
