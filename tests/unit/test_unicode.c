/* str decoding on crafted bytes. */
#include <stdint.h>
#include <string.h>

#include "../../core/decode/unicode.h"
#include "check.h"

static int same(const char *got, const char *want)
{
	return strcmp(got, want) == 0;
}

int main(void)
{
	char out[64];
	const uint8_t latin1[] = {'c', 'a', 'f', 0xe9};
	CHECK_EQ(pyd_str_to_utf8(latin1, 4, 1, out, sizeof out), 5);
	CHECK_EQ(same(out, "caf\xc3\xa9"), 1);

	const uint8_t ucs2[] = {0xe5, 0x65, 0x2c, 0x67}; /* 日本 */
	CHECK_EQ(pyd_str_to_utf8(ucs2, 2, 2, out, sizeof out), 6);
	CHECK_EQ(same(out, "\xe6\x97\xa5\xe6\x9c\xac"), 1);

	const uint8_t ucs4[] = {0x0b, 0x00, 0x02, 0x00}; /* U+2000B */
	CHECK_EQ(pyd_str_to_utf8(ucs4, 1, 4, out, sizeof out), 4);
	CHECK_EQ(same(out, "\xf0\xa0\x80\x8b"), 1);

	/* a lone surrogate and a code point past U+10FFFF: U+FFFD */
	const uint8_t bad4[] = {0x00, 0xd8, 0, 0, 0x00, 0x00, 0x11, 0x00};
	CHECK_EQ(pyd_str_to_utf8(bad4, 2, 4, out, sizeof out), 6);
	CHECK_EQ(same(out, "\xef\xbf\xbd\xef\xbf\xbd"), 1);

	/* an impossible kind is refused */
	CHECK_EQ(pyd_str_to_utf8(latin1, 4, 3, out, sizeof out), -1);
	CHECK_EQ(pyd_str_to_utf8(latin1, 4, 0, out, sizeof out), -1);

	/* output is cut at a whole character, always NUL-terminated */
	CHECK_EQ(pyd_str_to_utf8(ucs2, 2, 2, out, 5), 3);
	CHECK_EQ(same(out, "\xe6\x97\xa5"), 1);
	CHECK_EQ(pyd_str_to_utf8(ucs2, 2, 2, out, 1), 0);

	/* state bits: compact ASCII, compact UCS-2, legacy UCS-4 */
	struct pyd_str_state s = pyd_str_state_decode(1u << 2 | 1u << 5 | 1u << 6, 2);
	CHECK_EQ(s.kind, 1);
	CHECK_EQ(s.compact, 1);
	CHECK_EQ(s.ascii, 1);
	s = pyd_str_state_decode(3u | 2u << 2 | 1u << 5, 2);
	CHECK_EQ(s.kind, 2);
	CHECK_EQ(s.compact, 1);
	CHECK_EQ(s.ascii, 0);
	s = pyd_str_state_decode(4u << 2 | 1u << 7, 2);
	CHECK_EQ(s.kind, 4);
	CHECK_EQ(s.compact, 0);
	/* free-threaded: interned is a byte, kind starts at bit 8 */
	s = pyd_str_state_decode(0xffu | 1u << 8 | 1u << 11 | 1u << 12, 8);
	CHECK_EQ(s.kind, 1);
	CHECK_EQ(s.compact, 1);
	CHECK_EQ(s.ascii, 1);

	/* comm names cut mid-character lose the fragment; junk becomes '?' */
	char cut[] = "n\xc3\xbc-\xf0\xa0";
	pyd_utf8_repair(cut);
	CHECK_EQ(same(cut, "n\xc3\xbc-"), 1);
	char junk[] = "a\xff\xc3zb\xed";
	pyd_utf8_repair(junk);
	CHECK_EQ(same(junk, "a??zb"), 1);
	char fine[] = "\xe5\x90\x8d\xf0\xa0\x80\x8b";
	pyd_utf8_repair(fine);
	CHECK_EQ(same(fine, "\xe5\x90\x8d\xf0\xa0\x80\x8b"), 1);
	return check_done("test_unicode");
}
