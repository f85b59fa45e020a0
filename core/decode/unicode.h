/*
 * CPython str -> UTF-8.
 */
#ifndef PYD_UNICODE_H
#define PYD_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Longest string we copy out of a target, in code points; longer ones are
 * cut and end in "...". */
#define PYD_MAX_STR_CHARS 4096

/* The bits of PyASCIIObject.state we need: kind, compact and ascii, one
 * after the other from bit kind_bit (struct py_layout's unicode.kind_bit:
 * 2 in 3.3 - 3.15, 8 in free-threaded builds). */
struct pyd_str_state {
	unsigned kind; /* 1, 2 or 4 bytes per code point */
	int compact;
	int ascii;
};

struct pyd_str_state pyd_str_state_decode(uint32_t state, unsigned kind_bit);

/*
 * What tells a str from another put at its address later: its length and
 * the first bytes of its characters (of a non-compact str, the pointer to
 * them), kept from the reads that decoded it.  Rereading span bytes from
 * the str's length field on, pyd_str_mark_holds() (objects.h) compares
 * those parts only: the hash and state between them may be filled in
 * later.
 */
#define PYD_STR_MARK_DATA 16
struct pyd_str_mark {
	uint64_t length;
	uint8_t span; /* bytes from the length field to the data's end */
	uint8_t at;   /* where in them the data starts */
	uint8_t n;    /* how many of its bytes are kept */
	uint8_t data[PYD_STR_MARK_DATA];
};

/*
 * Encode n code points of the given kind as UTF-8 into out (NUL-terminated,
 * at most outsz bytes).  Invalid code points (surrogates, > U+10FFFF)
 * become U+FFFD.  Returns bytes written, or -1 for a bad kind.
 */
int pyd_str_to_utf8(const uint8_t *data, size_t n, unsigned kind, char *out,
		    size_t outsz);

/*
 * Make a NUL-terminated byte string valid UTF-8 in place: an incomplete
 * sequence at the end (the kernel cuts thread names at 15 bytes, mid
 * character) is dropped, any other invalid byte becomes '?'.
 */
void pyd_utf8_repair(char *s);

#endif
