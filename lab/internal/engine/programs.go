package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/bootlab/bootlab/internal/status"
	"github.com/bootlab/bootlab/lab/cache"
	"github.com/bootlab/bootlab/lab/labdir"
	"github.com/bootlab/bootlab/lab/release"
	"github.com/bootlab/bootlab/lab/upstream"
)

// Program is one program bootlab downloads or builds (lab/upstream), at
// the version an OpenShift release pins.
type Program struct {
	Name string
	// Version is the official release's (etcd: the one OpenShift ships);
	// BuildVersion what a build from the Go module proxy makes ("" when
	// it cannot be built).
	Version      string
	BuildVersion string
	OpenShift    string
	prog         upstream.Program
}

// UnknownProgramError is LookupProgram's error for a name it does not know
// (kubernetes and etcd are the ones it knows).
type UnknownProgramError struct{ Name string }

func (e *UnknownProgramError) Error() string {
	return fmt.Sprintf("bootlab gets no program %q (it gets %s)", e.Name, strings.Join(upstream.Names(), " and "))
}

// UnknownReleaseError is LookupProgram's error for an OpenShift version
// bootlab has no pins for.
type UnknownReleaseError struct{ Err error }

func (e *UnknownReleaseError) Error() string { return e.Err.Error() }
func (e *UnknownReleaseError) Unwrap() error { return e.Err }

// LookupProgram is program name of OpenShift release version, or why not.
func LookupProgram(name, version string) (*Program, error) {
	rel, err := release.For(version)
	if err != nil {
		if _, ok := upstream.ProgramFor(name, release.Release{}); !ok {
			return nil, &UnknownProgramError{Name: name}
		}
		return nil, &UnknownReleaseError{Err: err}
	}
	p, ok := upstream.ProgramFor(name, rel)
	if !ok {
		return nil, &UnknownProgramError{Name: name}
	}
	return &Program{Name: p.Name, Version: p.Version, BuildVersion: p.BuildVersion(), OpenShift: rel.OpenShift, prog: p}, nil
}

// ProgramOptions say where the program goes and how: Source is "" (the
// cache, else the official artefacts when pinned and reachable, else a
// build), "download" or "build".
type ProgramOptions struct {
	Dir    string
	Source string
	Log    *slog.Logger
	Status *status.Status
	// Progress receives the download's progress bar; TTY redraws it.
	Progress io.Writer
	TTY      bool
}

// BuiltProgram is a program in the cache: its files, where they came
// from and why, and whether this call downloaded or built them.
type BuiltProgram struct {
	Paths []string
	// Size is the files' total.
	Size int64
	// Version is the files' (etcd built: the module version).
	Version string
	// Source is "download" or "build"; Why says why.
	Source, Why string
	// Fetched is true when this call downloaded or built it, in Took.
	Fetched bool
	Took    time.Duration
}

// GetProgram puts p into the cache under o.Dir unless it is there, saying
// on o.Status which way and why.
func GetProgram(ctx context.Context, p *Program, o ProgramOptions) (*BuiltProgram, error) {
	src, err := upstream.ParseSource(o.Source)
	if err != nil {
		return nil, err
	}
	pl := upstream.NewPlan(ctx, p.prog, upstream.Options{CacheDir: o.Dir, Source: src, Log: o.Log, Progress: o.Progress, TTY: o.TTY})
	if pl.Err != nil {
		return nil, fmt.Errorf("OpenShift %s: %w", p.OpenShift, pl.Err)
	}
	what := fmt.Sprintf("%s %s for OpenShift %s", p.Name, p.Version, p.OpenShift)
	switch {
	case pl.Cached != nil:
		o.Status.Start("Finding %s %s for OpenShift %s in %s", p.Name, pl.Cached.Version, p.OpenShift, o.Dir)
	case pl.Source == upstream.Download:
		// The progress bar needs the line to itself: no spinner meanwhile.
		o.Status.Infof("Downloading %s into %s: %s", what, o.Dir, pl.Why)
	default:
		o.Status.Start("Building %s %s for OpenShift %s into %s (%s)", p.Name, p.BuildVersion, p.OpenShift, o.Dir, pl.Why)
	}
	b, err := pl.Run(ctx)
	if err != nil {
		o.Status.End(false)
		return nil, err
	}
	out := &BuiltProgram{Paths: b.Paths(), Version: b.Version, Source: string(b.Source), Why: b.Why, Fetched: b.Fetched, Took: b.Took}
	for _, path := range out.Paths {
		fi, err := os.Stat(path)
		if err != nil {
			o.Status.End(false)
			return nil, err
		}
		out.Size += fi.Size()
	}
	size := cache.HumanSize(out.Size)
	switch {
	case !b.Fetched:
		o.Status.EndDetail(true, size+", "+b.Why+"; nothing downloaded or built")
	case b.Source == upstream.Download:
		o.Status.Infof("Downloaded %s: %s in %s, every file checked against %s", what, size, b.Took.Round(time.Second), release.ChecksumsFile)
	default:
		o.Status.EndDetail(true, fmt.Sprintf("%s, built in %s", size, b.Took.Round(time.Second)))
	}
	return out, nil
}

// LabDirs are home and the directories of the labs under it: what a cache
// export must not include.
func LabDirs(home string) ([]string, error) {
	labs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	dirs := []string{home}
	for _, l := range labs {
		dirs = append(dirs, l.Dir)
	}
	return dirs, nil
}

// LabImages returns the image files every lab under home boots. A lab whose
// state cannot be read stops pruning: its probe image may be in use.
func LabImages(home string) ([]string, error) {
	labs, err := labdir.Find(home)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range labs {
		if l.Err != nil {
			return nil, fmt.Errorf("lab %s (%s): %w: its probe image may be in use, so nothing is pruned; fix or remove that lab first", l.Name, l.Dir, l.Err)
		}
		if l.State == nil || l.State.Spec == nil {
			continue
		}
		img := l.State.Spec.Image
		for _, p := range []string{img.Kernel, img.Initrd, img.Path} {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
