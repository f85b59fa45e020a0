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

struct pyd_buf {
	char *data;
	size_t len, cap;
	bool failed; /* an allocation failed: the text is incomplete */
};

void pyd_buf_printf(struct pyd_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pyd_buf_put(struct pyd_buf *b, const char *s, size_t n);
/* s, or "(null)" as printf's %s shows NULL: the pieces of the lines a
 * report has most of, without printf's format parsing. */
void pyd_buf_str(struct pyd_buf *b, const char *s);
/* v in decimal, without printf's machinery: the ids and numbers of large
 * reports. */
void pyd_buf_u64(struct pyd_buf *b, uint64_t v);
void pyd_buf_i64(struct pyd_buf *b, int64_t v);
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
