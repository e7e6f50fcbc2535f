// Package diagram draws bootlab's pictures from plain data: the lab
// topology, the bootstrap timeline, the etcd membership and a map of
// packages (the guest cluster), as SVG (laid out here, so no graphviz is
// needed at run time), Graphviz DOT and Mermaid. Callers (lab, stages, the
// docs' test reading the import graph) fill the data from the code the lab
// and the stages run, so a picture cannot drift from what bootlab does.
//
// Layouts are simple and deterministic: the same data always gives the
// same bytes, which the golden tests and the docs' drift test rely on.
package diagram
