/*
 * Line tables.  Each decoder mirrors what the interpreter of that era does
 * in PyCode_Addr2Line, including its answer for negative offsets (a frame
 * that has not started yet reports its first line).
 */
#include "linetable.h"

#include <limits.h>
#include <stdint.h>

/* Sums run in 64 bits: a table from hostile memory may add up past an
 * int.  A line that no longer fits one is no line (-1). */
static int as_line(int64_t line)
{
	return line < INT_MIN || line > INT_MAX ? -1 : (int)line;
}

int pyd_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int lasti)
{
	int64_t line = firstlineno, addr = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > lasti)
			break;
		line += (int8_t)tab[i + 1]; /* signed since 3.6 */
	}
	return as_line(line);
}

int pyd_line_310(const uint8_t *tab, size_t len, int firstlineno, int offset)
{
	if (offset < 0)
		return firstlineno;
	/* Pairs of (byte-length of a range, line delta); a delta of -128
	 * means the range has no line. */
	int64_t line = firstlineno, end = 0;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int delta = (int8_t)tab[i + 1];
		end += tab[i];
		if (delta != -128)
			line += delta;
		if (end > offset)
			return delta == -128 ? -1 : as_line(line);
	}
	return -1;
}

/* Variable-length unsigned ints: 6 bits a byte, bit 6 says "more". */
static int read_varint(const uint8_t *tab, size_t len, size_t *pos,
		       unsigned *out)
{
	unsigned val = 0, shift = 0;
	for (;;) {
		if (*pos >= len || shift > 28)
			return -1;
		uint8_t b = tab[(*pos)++];
		val |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = val;
	return 0;
}

static int read_svarint(const uint8_t *tab, size_t len, size_t *pos, int *out)
{
	unsigned u;
	if (read_varint(tab, len, pos, &u))
		return -1;
	/* u < 2^30 (read_varint stops there): both halves fit an int. */
	*out = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
	return 0;
}

/*
 * Each entry starts with a byte 1cccclll: code c says how the location is
 * stored, l+1 is how many code units (2 bytes each) it covers.
 */
int pyd_line_locations(const uint8_t *tab, size_t len, int firstlineno,
		       int offset)
{
	if (offset < 0)
		return firstlineno;
	int64_t line = firstlineno, addr = 0;
	size_t pos = 0;
	while (pos < len) {
		uint8_t first = tab[pos++];
		if (!(first & 0x80))
			return -1; /* lost sync: malformed table */
		int code = (first >> 3) & 15, units = (first & 7) + 1;
		int delta = 0;
		unsigned skip;
		switch (code) {
		case 15: /* no location */
			break;
		case 14: /* long form: line delta, end line, columns */
			if (read_svarint(tab, len, &pos, &delta) ||
			    read_varint(tab, len, &pos, &skip) ||
			    read_varint(tab, len, &pos, &skip) ||
			    read_varint(tab, len, &pos, &skip))
				return -1;
			break;
		case 13: /* no column */
			if (read_svarint(tab, len, &pos, &delta))
				return -1;
			break;
		case 12:
		case 11:
		case 10: /* one line, two column bytes */
			delta = code - 10;
			pos += 2;
			break;
		default: /* short form: same line, one column byte */
			pos += 1;
			break;
		}
		line += delta;
		addr += units * 2;
		if (addr > offset)
			return code == 15 ? -1 : as_line(line);
	}
	return -1;
}
