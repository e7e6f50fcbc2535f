package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The directories a spec names are cleaned before any use, and a system
// directory is refused with its field named, whatever way it is written.
func TestSystemDirectoriesAreRefused(t *testing.T) {
	// Not parallel: t.Setenv (BOOTLAB_HOME) changes the whole process's environment.
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	t.Setenv("BOOTLAB_HOME", "/srv/bootlab-home")
	for _, tc := range []struct {
		yaml, field, want string
	}{
		{"labDir: /", "labDir", "/ is a top-level system directory"},
		{"labDir: /etc", "labDir", "/etc is a top-level system directory"},
		{"labDir: /var/lib/bootlab/labs/../../../../etc", "labDir", "/etc is a top-level system directory"},
		{"labDir: /etc/bootlab/x", "labDir", "is inside /etc, which belongs to the operating system"},
		{"labDir: /tmp", "labDir", "/tmp is a top-level system directory"},
		{"labDir: /tmp/", "labDir", "/tmp is a top-level system directory"},
		{"labDir: " + home, "labDir", "is your home directory"},
		{"labDir: /home/alice", "labDir", "is a user's home directory"},
		{"labDir: /srv/bootlab-home/labs", "labDir", "is bootlab's own directory"},
		{"labDir: /var/lib", "labDir", "is a system directory that holds other programs' files"},
		{"storage: {poolDir: /etc}", "storage.poolDir", "/etc is a top-level system directory"},
		{"storage: {poolDir: /var/lib/libvirt/images}", "storage.poolDir", "is a system directory"},
		{"storage: {poolDir: /proc/self}", "storage.poolDir", "is inside /proc"},
		{"libvirt: {uri: 'qemu+ssh://root@hv/system', hostDir: /root}", "libvirt.hostDir", "/root is a top-level system directory"},
		{"libvirt: {uri: 'qemu+ssh://root@hv/system', hostDir: /usr/local/lab}", "libvirt.hostDir", "is inside /usr"},
		{"labDir: /srv/labs/x\nstorage: {poolDir: /srv/labs/x}", "storage.poolDir", "is also the labDir"},
	} {
		t.Run(tc.yaml, func(t *testing.T) {
			s, err := Parse([]byte("name: x\n"+tc.yaml+"\n"), "lab.yaml")
			require.NoError(t, err)
			s.Defaults()
			err = s.Validate()
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			var msgs []string
			for _, fe := range ve.Errs {
				if fe.Field == tc.field {
					msgs = append(msgs, fe.Msg)
				}
			}
			require.Len(t, msgs, 1, "errors: %v", ve.Errs)
			assert.Contains(t, msgs[0], tc.want)
		})
	}
}

// Directories of their own, anywhere else, are fine, and are used cleaned.
func TestLabDirectoriesOfTheirOwnAreAccepted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, labDir string }{
		{"labDir: " + dir + "/a/../lab", filepath.Join(dir, "lab")},
		{"labDir: /srv/labs/x/", "/srv/labs/x"},
		{"labDir: /var/lib/bootlab/labs/x", "/var/lib/bootlab/labs/x"},
	} {
		s, err := Parse([]byte("name: x\n"+tc.yaml+"\n"), "lab.yaml")
		require.NoError(t, err)
		s.Defaults()
		require.NoError(t, s.Validate(), tc.yaml)
		assert.Equal(t, tc.labDir, s.LabDir)
	}
}
