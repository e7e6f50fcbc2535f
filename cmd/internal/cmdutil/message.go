package cmdutil

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Long inputs (a 10,000-character --name, a pasted blob as a path) are cut
// in messages: a word of more than maxWord characters keeps its head and
// tail around "…", so the message still fits a screen and names the input.
const (
	maxWord  = 160
	keepHead = 60
	keepTail = 8
)

// CutLong returns msg with every word (a run of non-space characters)
// longer than maxWord characters cut to its head, "…" and its tail.
func CutLong(msg string) string {
	if len(msg) <= maxWord {
		return msg
	}
	var b strings.Builder
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		b.WriteString(cutWord(msg[start:end]))
		start = -1
	}
	for i, r := range msg {
		if unicode.IsSpace(r) {
			flush(i)
			b.WriteRune(r)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(msg))
	return b.String()
}

func cutWord(w string) string {
	n := utf8.RuneCountInString(w)
	if n <= maxWord {
		return w
	}
	r := []rune(w)
	return string(r[:keepHead]) + "…" + string(r[n-keepTail:])
}
