package badge

import "unicode/utf8"

// Verdana advance widths in thousandths of an em (units per em = 1000 in the
// font's AFM metrics), for the printable ASCII range 0x20–0x7E. Badges are
// laid out with these, as shields.io's badge-maker does, so that text fits
// its box without depending on the viewer's fonts.
var verdanaRegular = [95]uint16{
	351, 393, 458, 818, 635, 1076, 726, 268, 454, 454, 635, 818, 363, 454, 363, 454, // ' '–'/'
	635, 635, 635, 635, 635, 635, 635, 635, 635, 635, 454, 454, 818, 818, 818, 545, // '0'–'?'
	1000, 683, 685, 698, 770, 632, 574, 775, 751, 420, 454, 692, 556, 842, 748, 787, // '@'–'O'
	603, 787, 695, 683, 616, 731, 683, 988, 685, 615, 685, 454, 454, 454, 818, 635, // 'P'–'_'
	635, 600, 623, 520, 623, 595, 351, 623, 632, 274, 344, 591, 274, 972, 632, 606, // '`'–'o'
	623, 623, 426, 520, 394, 632, 591, 818, 591, 591, 525, 634, 454, 634, 818, // 'p'–'~'
}

// verdanaBold is the same table for Verdana Bold (the for-the-badge message).
var verdanaBold = [95]uint16{
	341, 402, 587, 867, 710, 1271, 862, 332, 543, 543, 710, 867, 361, 479, 361, 689, // ' '–'/'
	710, 710, 710, 710, 710, 710, 710, 710, 710, 710, 402, 402, 867, 867, 867, 616, // '0'–'?'
	963, 776, 761, 723, 830, 683, 650, 811, 837, 545, 555, 770, 637, 947, 846, 850, // '@'–'O'
	732, 850, 782, 710, 681, 812, 763, 1128, 763, 736, 691, 543, 689, 543, 867, 710, // 'P'–'_'
	710, 667, 699, 588, 699, 664, 422, 699, 712, 341, 402, 670, 341, 1058, 712, 686, // '`'–'o'
	699, 699, 497, 593, 455, 712, 649, 979, 668, 650, 596, 710, 543, 710, 867, // 'p'–'~'
}

// A few non-ASCII characters the site itself puts on badges.
var (
	extraRegular = map[rune]uint16{'·': 363, '–': 635, '—': 1000, '…': 818, '×': 818}
	extraBold    = map[rune]uint16{'·': 361, '–': 710, '—': 1000, '…': 1048, '×': 867}
)

// fallbackWidth is used for characters outside the tables: a full em, wide
// enough for CJK ideographs and most symbols, so text never overflows.
const fallbackWidth = 1000

// textWidth returns the advance width of s in pixels at the given font size,
// in Verdana (bold selects Verdana Bold). Control characters count as zero.
func textWidth(s string, size float64, bold bool) float64 {
	table, extra := &verdanaRegular, extraRegular
	if bold {
		table, extra = &verdanaBold, extraBold
	}
	var units int
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r >= 0x20 && r <= 0x7e:
			units += int(table[r-0x20])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// control characters have no width
		default:
			if w, ok := extra[r]; ok {
				units += int(w)
			} else {
				units += fallbackWidth
			}
		}
	}
	return float64(units) * size / 1000
}
