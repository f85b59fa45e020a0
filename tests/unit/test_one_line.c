/* pyd_one_line: a command line on one line of text, its control
 * characters and backslashes escaped as Python's repr() escapes them;
 * other characters, printable or not, as they are. */
#include <string.h>

#include "../../core/buf.h"
#include "check.h"

static int line_is(const char *s, size_t outsz, const char *want, bool whole)
{
	char out[128];
	bool got = pyd_one_line(s, out, outsz);
	return got == whole && !strcmp(out, want);
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
	return check_done("test_one_line");
}
