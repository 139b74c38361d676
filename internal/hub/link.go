package hub

import "strings"

// Link is one link of an RFC 8288 Link header.
type Link struct {
	URL    string            // the target, verbatim (not resolved)
	Params map[string]string // parameters, keys lower-cased, quotes removed
}

// ParseLinks parses Link header values (each may hold several
// comma-separated links) as RFC 8288 describes: `<url>; rel="next"`, with
// quoted or bare parameter values, commas and semicolons inside quotes or
// inside the <url>. Malformed parts are skipped.
func ParseLinks(values []string) []Link {
	var links []Link
	for _, v := range values {
		links = append(links, parseLinkValue(v)...)
	}
	return links
}

func parseLinkValue(s string) []Link {
	var links []Link
	i := 0
	for i < len(s) {
		// Find the next '<' that starts a link.
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		i += j + 1
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			break
		}
		l := Link{URL: strings.TrimSpace(s[i : i+end]), Params: map[string]string{}}
		i += end + 1
		// Parameters until a comma outside quotes, or the end.
		for i < len(s) {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) {
				break
			}
			if s[i] == ',' {
				i++
				break
			}
			if s[i] != ';' {
				// Junk between parameters: skip to the next separator.
				k := strings.IndexAny(s[i:], ";,")
				if k < 0 {
					i = len(s)
					break
				}
				i += k
				continue
			}
			i++ // ';'
			var key, val string
			key, val, i = parseLinkParam(s, i)
			if key != "" {
				if _, dup := l.Params[key]; !dup { // RFC 8288: the first occurrence wins
					l.Params[key] = val
				}
			}
		}
		links = append(links, l)
	}
	return links
}

// parseLinkParam reads `key`, `key=value` or `key="quoted \" value"` at s[i:].
func parseLinkParam(s string, i int) (key, val string, next int) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	start := i
	for i < len(s) && s[i] != '=' && s[i] != ';' && s[i] != ',' {
		i++
	}
	key = strings.ToLower(strings.TrimSpace(s[start:i]))
	if i >= len(s) || s[i] != '=' {
		return key, "", i
	}
	i++ // '='
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && s[i] == '"' {
		i++
		var b strings.Builder
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
			i++
		}
		if i < len(s) {
			i++ // closing quote
		}
		return key, b.String(), i
	}
	start = i
	for i < len(s) && s[i] != ';' && s[i] != ',' {
		i++
	}
	return key, strings.TrimSpace(s[start:i]), i
}

// nextLink returns the target of the first link whose rel includes "next"
// (rel may list several space-separated relation types), or "".
func nextLink(values []string) string {
	for _, l := range ParseLinks(values) {
		for rel := range strings.FieldsSeq(l.Params["rel"]) {
			if strings.EqualFold(rel, "next") {
				return l.URL
			}
		}
	}
	return ""
}
