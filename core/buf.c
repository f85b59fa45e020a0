#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct pyd_buf *b, size_t more)
{
	if (b->failed)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void pyd_buf_put(struct pyd_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = 0;
}

void pyd_buf_printf(struct pyd_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void pyd_buf_json_str(struct pyd_buf *b, const char *s)
{
	if (!s) {
		pyd_buf_put(b, "null", 4);
		return;
	}
	pyd_buf_put(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			char esc[2] = {'\\', (char)*p};
			pyd_buf_put(b, esc, 2);
		} else if (*p < 0x20) {
			pyd_buf_printf(b, "\\u%04x", *p);
		} else {
			pyd_buf_put(b, (const char *)p, 1);
		}
	}
	pyd_buf_put(b, "\"", 1);
}

void pyd_buf_free(struct pyd_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}
