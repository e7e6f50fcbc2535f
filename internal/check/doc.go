// Package check is the one shape of a check's outcome and its one printer.
// Preflight, lab verify, stage validate and stage status all report
// []Result and print them with Write (people) or as JSON (scripts), so a
// ✓, a ✗ and a fix line mean the same everywhere. It imports no bootlab
// package.
package check
