// Package markdown shows bootlab's docs pages to people: rendered with
// glamour and word-wrapped on a terminal, paged when longer than the screen,
// and the markdown as written when piped, with NO_COLOR or with TERM=dumb.
// Every command that prints a page from docs/ goes through Show.
package markdown
