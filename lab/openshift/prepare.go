package openshift

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/images"
	"github.com/bootlab/bootlab/lab/spec"
)

// PrepareOptions are what Prepare needs besides the spec.
type PrepareOptions struct {
	Log    *slog.Logger
	Status *status.Status
	// CacheDir keeps binaries and images across labs (images.DefaultCacheDir()).
	CacheDir string
	// HTTPClient downloads (nil: a client honouring HTTP(S)_PROXY).
	HTTPClient *http.Client
	// Progress receives download progress bars (stderr); TTY redraws them in place.
	Progress io.Writer
	TTY      bool
	// LookPath finds binaries on PATH (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// PullSecret is the pull secret CheckInputs already read and checked;
	// "" reads openshift.pullSecretFile.
	PullSecret string
}

// PrepareResult says what Prepare used and made.
type PrepareResult struct {
	Tools *Tools
	// Image is the RHCOS download (empty when image.path names the disk).
	Image images.RHCOSResult
	// BaseImage is the disk the VMs boot: image.path, or the cached RHCOS.
	// Prepare never writes it into the spec: the caller builds from it.
	BaseImage string
	Assets    *AssetsResult
}

// CheckInputs checks what the user hands an openshift-profile lab, before
// anything runs or is created (`lab up` calls it before connecting to
// libvirt, preflight and the lab key): the pull secret, which install-config
// needs even when image.path names the RHCOS image, and
// openshift.sshPublicKeyFile when set. It returns the pull secret, checked,
// for Prepare (PrepareOptions.PullSecret), so the file is read once. Errors
// never quote the secret.
func CheckInputs(s *spec.Spec) (pullSecret string, err error) {
	if pullSecret, err = LoadPullSecret(s.OpenShift.PullSecretFile); err != nil {
		return "", err
	}
	if s.OpenShift.SSHPublicKeyFile != "" {
		if _, err := LoadSSHPublicKey(s.OpenShift.SSHPublicKeyFile); err != nil {
			return "", err
		}
	}
	return pullSecret, nil
}

// Prepare readies an openshift-profile lab before its VMs are made: it
// checks the pull secret and SSH key (before anything runs), finds or
// downloads openshift-install and oc, finds or downloads RHCOS (the
// result's BaseImage: the cached qcow2 unless the spec names one), and
// creates the install assets and each node's Ignition. It does not change s.
func Prepare(ctx context.Context, s *spec.Spec, o PrepareOptions) (*PrepareResult, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.CacheDir == "" {
		o.CacheDir = images.DefaultCacheDir()
	}
	pullSecret, sshKey, err := checkSecrets(s, o)
	if err != nil {
		return nil, err
	}
	dl := &images.Downloader{Client: o.HTTPClient, Log: log, Progress: o.Progress, TTY: o.TTY}
	res := &PrepareResult{}
	o.Status.Start("Finding openshift-install and oc %s", s.OpenShift.Version)
	res.Tools, err = EnsureTools(ctx, ToolsOptions{
		Version:       s.OpenShift.Version,
		InstallerPath: s.OpenShift.InstallerPath,
		OCPath:        s.OpenShift.OCPath,
		Mirror:        s.OpenShift.Mirrors.Clients,
		CacheDir:      o.CacheDir,
		Downloader:    dl,
		Log:           log,
		LookPath:      o.LookPath,
	})
	if err != nil {
		o.Status.End(false)
		return nil, err
	}
	o.Status.End(true)
	o.Status.Infof("openshift-install: %s (%s)", res.Tools.Installer, res.Tools.InstallerFrom)
	o.Status.Infof("oc: %s (%s)", res.Tools.OC, res.Tools.OCFrom)
	inst := &Installer{Path: res.Tools.Installer, Log: log}
	if err := baseImage(ctx, s, o, inst, dl, res); err != nil {
		return nil, err
	}

	res.Assets, err = CreateAssets(ctx, s, AssetsOptions{
		Installer: inst, PullSecret: pullSecret, SSHKey: sshKey, Log: log, Status: o.Status,
	})
	if err != nil {
		return nil, err
	}
	if s.OpenShift.ManualBootstrap {
		o.Status.Infof("manual bootstrap: bootkube.service is masked on the bootstrap node; drive it with `bootlab stage`, then `bootlab stage handoff`")
	}
	return res, nil
}

// checkSecrets reads the pull secret (unless o gives it) and the SSH key,
// before anything runs.
func checkSecrets(s *spec.Spec, o PrepareOptions) (pullSecret, sshKey string, err error) {
	o.Status.Start("Checking the pull secret and SSH key")
	pullSecret = o.PullSecret
	if pullSecret == "" {
		if pullSecret, err = LoadPullSecret(s.OpenShift.PullSecretFile); err != nil {
			o.Status.End(false)
			return "", "", err
		}
	}
	if sshKey, err = InstallSSHKeys(s); err != nil {
		o.Status.End(false)
		return "", "", err
	}
	o.Status.End(true)
	return pullSecret, sshKey, nil
}

// baseImage sets res's base image: the spec's image.path, else the RHCOS
// the installer's stream metadata names, from the cache or downloaded and
// verified.
func baseImage(ctx context.Context, s *spec.Spec, o PrepareOptions, inst *Installer, dl *images.Downloader, res *PrepareResult) error {
	if s.Image.Path != "" {
		if _, err := os.Stat(s.Image.Path); err != nil {
			return fmt.Errorf("image.path %s: %w: unset it to use the installer's RHCOS, or fix the path", s.Image.Path, err)
		}
		o.Status.Infof("RHCOS image: %s (image.path)", s.Image.Path)
		res.BaseImage = s.Image.Path
		return nil
	}
	o.Status.Start("Reading the installer's RHCOS stream metadata")
	data, err := inst.PrintStreamJSON(ctx)
	if err != nil {
		o.Status.End(false)
		return err
	}
	stream, err := images.ParseStream(data)
	if err != nil {
		o.Status.End(false)
		return err
	}
	disk, err := stream.QEMUDisk("x86_64")
	if err != nil {
		o.Status.End(false)
		return err
	}
	o.Status.End(true)
	// The progress bar needs the line to itself: no spinner meanwhile.
	o.Status.Infof("RHCOS %s (%s): %s", disk.Release, disk.Stream, disk.FileName())
	res.Image, err = images.EnsureRHCOS(ctx, dl, o.CacheDir, disk, s.OpenShift.Mirrors.RHCOS)
	if err != nil {
		return err
	}
	if res.Image.Cached {
		o.Status.Infof("RHCOS image cached: %s", res.Image.Path)
	} else {
		o.Status.Infof("RHCOS image downloaded and verified: %s", res.Image.Path)
	}
	res.BaseImage = res.Image.Path
	return nil
}
