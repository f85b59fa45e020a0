/* pyd_one_line: a command line on one line of text, its control
 * characters and backslashes escaped as Python's repr() escapes them;
 * other characters, printable or not, as they are.  And the buffer's other
 * writers, and its sink. */
#include <stdio.h>
#include <string.h>

#include "../../core/buf.h"
#include "check.h"

static int line_is(const char *s, size_t outsz, const char *want, bool whole)
{
	char out[128];
	bool got = pyd_one_line(s, out, outsz);
	return got == whole && !strcmp(out, want);
}

/* The buffer's writers: numbers without printf, JSON strings escaped in
 * runs, printf past the room there is. */
static int buf_is(struct pyd_buf *b, const char *want)
{
	int ok = b->len == strlen(want) && !strcmp(b->data, want);
	if (!ok)
		fprintf(stderr, "buffer %s, want %s\n", b->data, want);
	pyd_buf_free(b);
	*b = (struct pyd_buf){0};
	return ok;
}

static void check_buf(void)
{
	struct pyd_buf b = {0};
	pyd_buf_u64(&b, 0);
	pyd_buf_put(&b, " ", 1);
	pyd_buf_u64(&b, UINT64_MAX);
	pyd_buf_put(&b, " ", 1);
	pyd_buf_i64(&b, INT64_MIN);
	pyd_buf_put(&b, " ", 1);
	pyd_buf_i64(&b, -1);
	CHECK_EQ(buf_is(&b, "0 18446744073709551615 -9223372036854775808 -1"), 1);
	pyd_buf_hex(&b, 0);
	pyd_buf_put(&b, " ", 1);
	pyd_buf_hex(&b, 0x7f1234abcdefULL);
	pyd_buf_put(&b, " ", 1);
	pyd_buf_hex(&b, UINT64_MAX);
	CHECK_EQ(buf_is(&b, "0x0 0x7f1234abcdef 0xffffffffffffffff"), 1);
	pyd_buf_json_str(&b, "a\"b\\c\n\x01" "d\xc3\xa9");
	CHECK_EQ(buf_is(&b, "\"a\\\"b\\\\c\\u000a\\u0001d\xc3\xa9\""), 1);
	pyd_buf_json_str(&b, NULL);
	pyd_buf_json_str(&b, "");
	CHECK_EQ(buf_is(&b, "null\"\""), 1);
	char big[6000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	pyd_buf_printf(&b, "%d", 42);
	pyd_buf_printf(&b, "%s", big); /* past the first 4096 bytes */
	CHECK_EQ(b.len, 2 + sizeof big - 1);
	CHECK_EQ(b.data[b.len], 0);
	CHECK_EQ(!strncmp(b.data, "42xx", 4), 1);
	pyd_buf_free(&b);
	/* Two digits at a time: every length, each side of a power of 10. */
	for (uint64_t p = 1; p <= 1000000000000000000ull; p *= 10)
		for (uint64_t v = p - 1; v <= p + 1; v++) {
			char want[24];
			snprintf(want, sizeof want, "%llu", (unsigned long long)v);
			pyd_buf_u64(&b, v);
			CHECK_EQ(buf_is(&b, want), 1);
		}
}

/* A sink's buffer hands its text out in pieces, each write whole in one
 * piece, and the last write still held (pyd_report_json_vars reopens it). */
static struct pyd_buf sunk_text;
static size_t pieces;

static void sink(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	CHECK_EQ(n <= PYD_BUF_PIECE, 1);
	pyd_buf_put(&sunk_text, s, n);
	pieces++;
}

static void check_sink(void)
{
	struct pyd_buf b = {.sink = sink};
	char word[100];
	memset(word, 'y', sizeof word);
	for (int i = 0; i < 5000; i++) {
		pyd_buf_put(&b, word, sizeof word);
		pyd_buf_u64(&b, (uint64_t)i);
		CHECK_EQ(b.data[b.len - 1], (char)('0' + i % 10));
	}
	CHECK_EQ(b.sunk + b.len > 500000, 1);
	CHECK_EQ(b.cap <= 2 * PYD_BUF_PIECE, 1);
	CHECK_EQ(pieces > 5, 1);
	pyd_buf_put(&sunk_text, b.data, b.len);
	CHECK_EQ(sunk_text.len, b.sunk + b.len);
	size_t at = 0;
	for (int i = 0; i < 5000; i++) {
		CHECK_EQ(memcmp(sunk_text.data + at, word, sizeof word), 0);
		at += sizeof word;
		char n[8];
		size_t k = (size_t)snprintf(n, sizeof n, "%d", i);
		CHECK_EQ(memcmp(sunk_text.data + at, n, k), 0);
		at += k;
	}
	CHECK_EQ(at, sunk_text.len);
	pyd_buf_free(&b);
	pyd_buf_free(&sunk_text);
}

int main(void)
{
	/* newline, tab, CR, a backslash; other C0 controls and DEL */
	CHECK_EQ(line_is("a\nb\tc\rd\\e", 128, "a\\nb\\tc\\rd\\\\e", true), 1);
	CHECK_EQ(line_is("\x01\x1b[1m\x7f", 128, "\\x01\\x1b[1m\\x7f", true), 1);
	/* UTF-8 passes whole: 日 is E6 97 A5, its 0x97 no C1 control */
	CHECK_EQ(line_is("caf\xc3\xa9 \xe6\x97\xa5", 128, "caf\xc3\xa9 \xe6\x97\xa5",
			 true), 1);
	/* U+0085 (NEL, C2 85) is a C1 control; U+00A0 is not */
	CHECK_EQ(line_is("x\xc2\x85y\xc2\xa0", 128, "x\\x85y\xc2\xa0", true), 1);
	/* a byte that starts no character, and a sequence cut short */
	CHECK_EQ(line_is("\x9b" "2J \xe6\x97", 128, "\\x9b2J \\xe6\\x97", true), 1);
	/* cut before an escape or a character that does not fit */
	CHECK_EQ(line_is("ab\ncd", 4, "ab", false), 1);
	CHECK_EQ(line_is("ab\ncd", 5, "ab\\n", false), 1);
	CHECK_EQ(line_is("a\xe6\x97\xa5", 4, "a", false), 1);
	CHECK_EQ(line_is("abc", 4, "abc", true), 1);
	CHECK_EQ(line_is("", 1, "", true), 1);
	check_buf();
	check_sink();
	return check_done("test_one_line");
}
