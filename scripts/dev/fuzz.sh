#!/usr/bin/env bash
# Fuzz each TARGET:PACKAGE for FUZZTIME (make fuzz). A failure that wrote
# no failing input to PACKAGE/testdata/fuzz/TARGET is Go's fuzzing
# coordinator stopping on its own -fuzztime deadline ("context deadline
# exceeded": it compares the deadline's context with its child's before
# the child is cancelled, most often on a loaded machine), not something
# the target did: that target is fuzzed once more, and fails the run if it
# fails again. Any failure that wrote an input fails the run at once.
#
# usage: fuzz.sh FUZZTIME MINIMIZE TARGET:PACKAGE...
#   MINIMIZE is -fuzzminimizetime: a count (1000x) bounds the minimizing of
#   every new input that widens coverage, which by time (Go's default 60 s)
#   kept both workers busy past FUZZTIME.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 FUZZTIME MINIMIZE TARGET:PACKAGE..." >&2; exit 2; }
fuzztime=$1 minimize=$2
shift 2
go=${GO:-go}

inputs() { # the failing inputs written for target $1 in package $2 so far
  local d="$2/testdata/fuzz/$1"
  if [ -d "${d}" ]; then find "${d}" -type f | sort; fi
}

for t in "$@"; do
  target=${t%%:*} pkg=${t#*:}
  for try in 1 2; do
    echo "== ${target} (${pkg}, ${fuzztime})"
    before=$(inputs "${target}" "${pkg}")
    if "${go}" test -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" -fuzzminimizetime "${minimize}" "${pkg}"; then
      continue 2
    fi
    if [ "$(inputs "${target}" "${pkg}")" != "${before}" ]; then
      echo "== ${target} failed on the input written to ${pkg}/testdata/fuzz/${target} (go test ${pkg} runs it from now on)" >&2
      exit 1
    fi
    if [ "${try}" = 2 ]; then
      echo "== ${target} failed twice without writing a failing input" >&2
      exit 1
    fi
    echo "== ${target} failed without writing a failing input (Go's fuzzing coordinator and its own deadline): once more" >&2
  done
done
