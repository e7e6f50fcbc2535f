package procstat

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statLine is a stat line of a process named comm in state, with the
// four times given and the other fields as the kernel prints them.
func statLine(comm, state, utime, stime, cutime, cstime string) string {
	return "4242 (" + comm + ") " + state + " 1 4242 4242 0 -1 4194560 1234 0 0 0 " +
		utime + " " + stime + " " + cutime + " " + cstime + " 20 0 1 0 99 12345678 456 18446744073709551615\n"
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		want       Stat
	}{
		{"plain", statLine("etcd", "S", "150", "30", "7", "3"),
			Stat{Comm: "etcd", State: 'S', UTime: 150, STime: 30, CUTime: 7, CSTime: 3}},
		{"a name cut at 15 bytes", statLine("kube-controller", "R", "1", "2", "0", "0"),
			Stat{Comm: "kube-controller", State: 'R', UTime: 1, STime: 2}},
		{"a name with spaces and ') '", statLine("a) b (c", "Z", "5", "6", "0", "0"),
			Stat{Comm: "a) b (c", State: 'Z', UTime: 5, STime: 6}},
		{"an empty name", statLine("", "X", "0", "0", "0", "0"), Stat{State: 'X'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tc.line))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]string{
		"empty":               "",
		"no parentheses":      "4242 etcd S 1 2 3",
		"')' before '('":      "4242 )etcd( S 1 2 3 4 5 6 7 8 9 10 11 12 13 14",
		"too few fields":      "4242 (etcd) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 30",
		"a time not a number": statLine("etcd", "S", "150", "x", "0", "0"),
		"a negative time":     statLine("etcd", "S", "-1", "0", "0", "0"),
		"a state of two":      statLine("etcd", "SS", "1", "0", "0", "0"),
	} {
		_, err := Parse([]byte(line))
		assert.Error(t, err, name)
	}
}

func TestStatTimes(t *testing.T) {
	t.Parallel()
	s := Stat{State: 'S', UTime: 1, STime: 2, CUTime: 30, CSTime: 400}
	assert.Equal(t, int64(3), s.Ticks())
	assert.Equal(t, int64(433), s.TicksWithChildren())
	assert.False(t, s.Gone())
	assert.True(t, Stat{State: 'Z'}.Gone())
	assert.True(t, Stat{State: 'X'}.Gone())
	assert.False(t, Stat{State: 'D'}.Gone())
}

// The parser reads this process's own line as the kernel writes it.
func TestParseSelf(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	s, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(readComm(t)), s.Comm)
	assert.Contains(t, "RSD", string(s.State), "a running test is not a zombie")
	assert.False(t, s.Gone())
}

func readComm(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	return string(data)
}

// FuzzParse: no line panics, and a parsed line's name and times are what
// the line holds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(statLine("etcd", "S", "150", "30", "7", "3")))
	f.Add([]byte(statLine("a) b (c", "Z", "5", "6", "0", "0")))
	f.Add([]byte("4242 (x"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, line []byte) {
		s, err := Parse(line)
		if err != nil {
			return
		}
		if !strings.Contains(string(line), "("+s.Comm+")") {
			t.Fatalf("name %q is not the parenthesised name of %q", s.Comm, line)
		}
		if s.UTime < 0 || s.STime < 0 || s.CUTime < 0 || s.CSTime < 0 {
			t.Fatalf("a negative time from %q: %+v", line, s)
		}
	})
}
