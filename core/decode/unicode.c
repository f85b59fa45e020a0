#include "unicode.h"

#include <string.h>

struct pyd_str_state pyd_str_state_decode(uint32_t state, unsigned kind_bit)
{
	/* interned (2 bits, or a byte), kind:3, compact:1, ascii:1, ... */
	struct pyd_str_state s = {
		.kind = (state >> kind_bit) & 7,
		.compact = (state >> (kind_bit + 3)) & 1,
		.ascii = (state >> (kind_bit + 4)) & 1,
	};
	return s;
}

static size_t put_utf8(uint32_t c, char *o)
{
	if (c >= 0xd800 && c <= 0xdfff)
		c = 0xfffd;
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 63));
		o[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	if (c > 0x10ffff)
		return put_utf8(0xfffd, o);
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 63));
	o[2] = (char)(0x80 | ((c >> 6) & 63));
	o[3] = (char)(0x80 | (c & 63));
	return 4;
}

int pyd_str_to_utf8(const uint8_t *data, size_t n, unsigned kind, char *out,
		    size_t outsz)
{
	if ((kind != 1 && kind != 2 && kind != 4) || outsz == 0)
		return -1;
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c;
		if (kind == 1)
			c = data[i];
		else if (kind == 2)
			c = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			memcpy(&c, data + 4 * i, 4);
		char tmp[4];
		size_t k = put_utf8(c, tmp);
		if (w + k + 1 > outsz)
			break;
		memcpy(out + w, tmp, k);
		w += k;
	}
	out[w] = 0;
	return (int)w;
}

/* Length of the valid UTF-8 sequence at p (1-4), 0 if invalid, -1 if it is
 * cut short by the end of the string. */
static int utf8_seq(const unsigned char *p)
{
	int n = p[0] < 0x80 ? 1 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2
				: p[0] >= 0xe0 && p[0] < 0xf0 ? 3
				: p[0] >= 0xf0 && p[0] < 0xf5 ? 4 : 0;
	for (int i = 1; i < n; i++) {
		if (!p[i])
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

void pyd_utf8_repair(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		int n = utf8_seq(p);
		if (n < 0) {
			*p = 0;
			return;
		}
		if (n == 0) {
			*p++ = '?';
			continue;
		}
		p += n;
	}
}
