/*
 * A growable text buffer: reports are written here and the frontend
 * decides where they go (a terminal, gdb's console, lldb's result object);
 * and how a string is escaped for them: in JSON, on one line of text.
 */
#ifndef PYD_BUF_H
#define PYD_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct pyd_buf {
	char *data;
	size_t len, cap;
	bool failed; /* an allocation failed: the text is incomplete */
	/* len may grow below it without a call: cap, or less where a piece
	 * is due to the sink; 0 until the first write and after a failure */
	size_t room;
	/* Where a long text goes while it is written (the CLI's standard
	 * output), a piece of PYD_BUF_PIECE at a time, so that its memory
	 * is used again: the 3 MB JSON of 10,000 tasks kept whole was 850
	 * page faults.  NULL keeps it all in data.  A write hands out what
	 * was there before it, never what it writes: the text last written
	 * is still in data (pyd_report_json_vars reopens an object). */
	void (*sink)(void *ctx, const char *s, size_t n);
	void *sink_ctx;
	size_t sunk; /* bytes handed to sink */
};

#define PYD_BUF_PIECE (64 * 1024)

void pyd_buf_printf(struct pyd_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Room for more bytes and the terminating 0; false if out of memory.
 * pyd_buf_put's slow path. */
bool pyd_buf_reserve(struct pyd_buf *b, size_t more);
/* A report is millions of short pieces: the common case is inline. */
static inline void pyd_buf_put(struct pyd_buf *b, const char *s, size_t n)
{
	if (b->len + n >= b->room && !pyd_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}
/* s, or "(null)" as printf's %s shows NULL: the pieces of the lines a
 * report has most of, without printf's format parsing. */
void pyd_buf_str(struct pyd_buf *b, const char *s);
/* v in decimal, without printf's machinery: the ids and numbers of large
 * reports. */
void pyd_buf_u64(struct pyd_buf *b, uint64_t v);
void pyd_buf_i64(struct pyd_buf *b, int64_t v);
/* v as 0x and lowercase hex digits, as printf's 0x%llx: addresses. */
void pyd_buf_hex(struct pyd_buf *b, uint64_t v);
/* s as a JSON string literal (quotes included), or null if s is NULL. */
void pyd_buf_json_str(struct pyd_buf *b, const char *s);
/* s for one line of text (a command line), into out: each control
 * character as Python's repr() escapes it (\n, \t, \r, \xNN) and a
 * backslash doubled.  Stops before a character that does not fit in
 * outsz (> 0); false if it cut s. */
bool pyd_one_line(const char *s, char *out, size_t outsz);
void pyd_buf_free(struct pyd_buf *b);
/* The text as a string of its own (malloc'd, as many bytes as it has), b
 * freed; NULL if an allocation failed.  A string kept in the buffer's
 * 4 KiB is a page of its own, a page fault each when thousands are kept
 * (a dump's locals); copied out, the next buffer is the same memory. */
char *pyd_buf_take(struct pyd_buf *b);

#endif
