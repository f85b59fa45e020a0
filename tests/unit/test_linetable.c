/* Line tables on crafted bytes, including malformed ones. */
#include <stdint.h>

#include "../../core/decode/linetable.h"
#include "check.h"

static void lnotab(void)
{
	/* (addr += a, line += l) pairs; the line delta is signed */
	const uint8_t t[] = {0, 1, 6, 2, 4, 0xff};
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, -1), 10);
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, 0), 11);
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, 5), 11);
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, 6), 13);
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, 10), 12);
	CHECK_EQ(pyd_line_lnotab(t, sizeof t, 10, 1000), 12);
	/* odd length: the dangling byte is ignored */
	CHECK_EQ(pyd_line_lnotab(t, 3, 10, 100), 11);
	CHECK_EQ(pyd_line_lnotab(t, 0, 10, 100), 10);
}

static void linetable_310(void)
{
	/* [0,4) +1; empty +2; [4,10) no line; [10,14) -1 */
	const uint8_t t[] = {4, 1, 0, 2, 6, 0x80, 4, 0xff};
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, -2), 5);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 0), 6);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 3), 6);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 4), -1);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 10), 7);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 13), 7);
	CHECK_EQ(pyd_line_310(t, sizeof t, 5, 14), -1);
	CHECK_EQ(pyd_line_310(t, 1, 5, 0), -1);
}

static void locations(void)
{
	const uint8_t t[] = {
		0x80 | 13 << 3 | 1, 0x04,             /* [0,4)  +2 no column */
		0x80 | 11 << 3 | 0, 1, 2,             /* [4,6)  +1 one-line  */
		0x80 | 15 << 3 | 0,                   /* [6,8)  no location  */
		0x80 | 14 << 3 | 1, 0x05, 0, 0, 0,    /* [8,12) -2 long form */
		0x80 | 0 << 3 | 0, 7,                 /* [12,14) short form  */
		0x80 | 14 << 3 | 0, 0x48, 0x03, 0, 0, 0, /* [14,16) +100     */
	};
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, -2), 1);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 0), 3);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 2), 3);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 4), 4);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 6), -1);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 8), 2);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 12), 2);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 14), 102);
	CHECK_EQ(pyd_line_locations(t, sizeof t, 1, 16), -1);
	/* truncated inside the long form's varints */
	CHECK_EQ(pyd_line_locations(t, 8, 1, 8), -1);
	/* a byte without the entry-start bit: lost sync */
	const uint8_t bad[] = {0x04, 0x80 | 13 << 3, 2};
	CHECK_EQ(pyd_line_locations(bad, sizeof bad, 1, 0), -1);
	/* an endless varint is refused, not looped on */
	const uint8_t endless[] = {0x80 | 13 << 3, 0x7f, 0x7f, 0x7f, 0x7f,
				   0x7f, 0x7f, 0x7f, 0x7f};
	CHECK_EQ(pyd_line_locations(endless, sizeof endless, 1, 0), -1);
}

/* Sums past an int (hostile memory): no line, and no signed overflow
 * (the UBSan build checks that). */
static void overflow(void)
{
	const uint8_t up[] = {0, 127};
	CHECK_EQ(pyd_line_lnotab(up, sizeof up, INT32_MAX - 1, 10), -1);
	CHECK_EQ(pyd_line_310((const uint8_t[]){255, 127}, 2, INT32_MAX - 1, 0), -1);
	/* five long-form entries of +2^29 - 1 each (then end line and
	 * columns 0), one code unit each, from line 1 */
	uint8_t big[5 * 9];
	for (int i = 0; i < 5; i++) {
		const uint8_t e[] = {0x80 | 14 << 3, 0x7e, 0x7f, 0x7f, 0x7f,
		                     0x3f, 0, 0, 0};
		for (int j = 0; j < 9; j++)
			big[i * 9 + j] = e[j];
	}
	CHECK_EQ(pyd_line_locations(big, sizeof big, 1, 6), INT32_MAX - 2);
	CHECK_EQ(pyd_line_locations(big, sizeof big, 1, 8), -1);
}

int main(void)
{
	lnotab();
	linetable_310();
	locations();
	overflow();
	return check_done("test_linetable");
}
