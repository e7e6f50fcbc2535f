// Package ignition builds and checks Ignition configs (spec 3.2, as the
// installer writes them) through the coreos/ignition/v2 types: the tiny
// pointer configs masters and workers boot with, full configs carrying
// files, and validation by marshal + v3_2.Parse.
package ignition
