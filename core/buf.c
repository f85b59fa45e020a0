#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pyd_buf_reserve(struct pyd_buf *b, size_t more)
{
	b->room = 0;
	if (b->failed)
		return false;
	if (b->sink && b->len && b->len + more + 1 > PYD_BUF_PIECE) {
		b->sink(b->sink_ctx, b->data, b->len);
		b->sunk += b->len;
		b->len = 0;
	}
	if (b->len + more + 1 > b->cap) {
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
	}
	b->room = b->sink && b->cap > PYD_BUF_PIECE ? PYD_BUF_PIECE : b->cap;
	return true;
}

void pyd_buf_printf(struct pyd_buf *b, const char *fmt, ...)
{
	/* Formatted once into the room there is, again only where it did
	 * not fit: a report is millions of short pieces. */
	va_list ap;
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_start(ap, fmt);
	int n = b->failed ? -1
			  : vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= room) {
		if (!pyd_buf_reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void pyd_buf_str(struct pyd_buf *b, const char *s)
{
	if (!s)
		s = "(null)";
	pyd_buf_put(b, s, strlen(s));
}

void pyd_buf_u64(struct pyd_buf *b, uint64_t v)
{
	/* Two digits a division: a task graph's JSON is ids of 15. */
	static const char pairs[] = "00010203040506070809101112131415161718"
				    "19202122232425262728293031323334353637"
				    "38394041424344454647484950515253545556"
				    "57585960616263646566676869707172737475"
				    "76777879808182838485868788899091929394"
				    "9596979899";
	char d[20];
	size_t n = 0;
	for (; v >= 100; v /= 100) {
		n += 2;
		memcpy(d + sizeof d - n, pairs + 2 * (v % 100), 2);
	}
	if (v >= 10) {
		n += 2;
		memcpy(d + sizeof d - n, pairs + 2 * v, 2);
	} else {
		d[sizeof d - ++n] = (char)('0' + v);
	}
	pyd_buf_put(b, d + sizeof d - n, n);
}

void pyd_buf_i64(struct pyd_buf *b, int64_t v)
{
	if (v < 0) {
		pyd_buf_put(b, "-", 1);
		pyd_buf_u64(b, -(uint64_t)v);
	} else {
		pyd_buf_u64(b, (uint64_t)v);
	}
}

void pyd_buf_hex(struct pyd_buf *b, uint64_t v)
{
	char d[18];
	size_t n = 0;
	do
		d[sizeof d - ++n] = "0123456789abcdef"[v & 15];
	while ((v >>= 4));
	d[sizeof d - ++n] = 'x';
	d[sizeof d - ++n] = '0';
	pyd_buf_put(b, d + sizeof d - n, n);
}

void pyd_buf_json_str(struct pyd_buf *b, const char *s)
{
	if (!s) {
		pyd_buf_put(b, "null", 4);
		return;
	}
	pyd_buf_put(b, "\"", 1);
	const unsigned char *p = (const unsigned char *)s, *run = p;
	for (; *p; p++) {
		if (*p != '"' && *p != '\\' && *p >= 0x20)
			continue; /* copied with its run of plain bytes */
		pyd_buf_put(b, (const char *)run, (size_t)(p - run));
		run = p + 1;
		if (*p < 0x20) {
			pyd_buf_printf(b, "\\u%04x", *p);
		} else {
			char esc[2] = {'\\', (char)*p};
			pyd_buf_put(b, esc, 2);
		}
	}
	pyd_buf_put(b, (const char *)run, (size_t)(p - run));
	pyd_buf_put(b, "\"", 1);
}

/* The escape repr() writes for code point c (a control character or a
 * backslash) into esc, or for a stray byte that starts no UTF-8
 * character; 0 if c stands for itself. */
static size_t escape_of(unsigned c, bool stray, char esc[5])
{
	static const char named[] = "\\\n\r\t", letter[] = "\\nrt";
	const char *at = c && c < 0x80 ? strchr(named, (int)c) : NULL;
	if (at) {
		esc[0] = '\\';
		esc[1] = letter[at - named];
		return 2;
	}
	if (stray || c < 0x20 || (c >= 0x7f && c < 0xa0))
		return (size_t)snprintf(esc, 5, "\\x%02x", c);
	return 0;
}

/* The bytes of the UTF-8 character s starts with (1 for a stray byte). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 1;
	return n;
}

bool pyd_one_line(const char *s, char *out, size_t outsz)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	while (*p) {
		size_t len = utf8_len(p);
		/* The code point where it may be a control: C1 controls
		 * (U+0080-U+009F) are 0xC2 0x80-0x9F; longer characters are
		 * none (0xA0 stands for them). */
		unsigned c = len == 1 ? p[0] : len == 2 && p[0] == 0xc2 ? p[1] : 0xa0;
		char esc[5];
		size_t k = escape_of(c, len == 1 && c >= 0x80, esc);
		if (n + (k ? k : len) >= outsz)
			break;
		memcpy(out + n, k ? esc : (const char *)p, k ? k : len);
		n += k ? k : len;
		p += len;
	}
	out[n] = 0;
	return !*p;
}

void pyd_buf_free(struct pyd_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

char *pyd_buf_take(struct pyd_buf *b)
{
	char *s = b->failed ? NULL : malloc(b->len + 1);
	if (s) {
		memcpy(s, b->data ? b->data : "", b->len);
		s[b->len] = 0;
	}
	pyd_buf_free(b);
	return s;
}
