// Package archtest holds the test that keeps bootlab's import arrows
// pointing the way docs/architecture.md draws them. It has no code.
package archtest
