// Package dashcmd holds `bootlab dashboard`: it parses flags and runs the
// server of package dashboard; it holds no dashboard logic.
package dashcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/bootlab/bootlab/cmd/internal/cmdutil"
	"github.com/bootlab/bootlab/dashboard"
)

// Options are the options of `bootlab dashboard`.
type Options struct {
	Listen   string
	Home     string
	URIs     []string
	Interval time.Duration
}

// NewCmdDashboard builds `bootlab dashboard`.
func NewCmdDashboard(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live web page of every lab on the host: topology, load balancer health, bootstrap stages",
		Example: `  bootlab dashboard
  bootlab dashboard --listen 127.0.0.1:8080 --interval 2s`,
		Long: `Serve a read-only web page of every lab on the host, for a learner's screen or
a trainer's projector: each lab's topology (host, load balancer with its four
frontends and each backend's health, bootstrap, masters, workers, DNS names),
each node's state and address, the last verify result, the bootstrap's stages
(done, running, failed with its message) and its phase (bootstrap active,
handoff, bootstrap removed); and a class view with one tile per lab, failures
first. The page updates itself (server-sent events) within about a second of
a change.

It listens on ` + dashboard.DefaultListen + ` by default. Listening on any other
address requires a token: one is generated and printed once on stderr, in the
URL to open. JSON: /api/labs, /api/labs/NAME; events: /api/events.`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Interval < 100*time.Millisecond {
				return cmdutil.UsageErrorf("--interval %s is too short: at least 100ms", opts.Interval)
			}
			if _, err := dashboard.RequiresToken(opts.Listen); err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", dashboard.DefaultListen, "address to serve on (host:port); beyond loopback a token is required")
	fl.StringVar(&opts.Home, "home", "", "bootlab home whose labs to show (default $BOOTLAB_HOME, else /var/lib/bootlab as root)")
	fl.StringSliceVar(&opts.URIs, "uri", []string{"qemu:///system"}, "libvirt URIs searched for orphaned labs (the labs' own URIs are always read)")
	fl.DurationVar(&opts.Interval, "interval", time.Second, "how often the labs are read")
	return cmd
}

func run(ctx context.Context, f *cmdutil.Factory, opts *Options) error {
	needToken, _ := dashboard.RequiresToken(opts.Listen)
	token := ""
	if needToken {
		t, err := dashboard.NewToken()
		if err != nil {
			return fmt.Errorf("generate dashboard token: %w", err)
		}
		token = t
	}
	// The trainer's view (the faults set on the labs) always takes a token
	// of its own, on loopback too: the learners' view is what a projector
	// shows.
	trainerToken, err := dashboard.NewToken()
	if err != nil {
		return fmt.Errorf("generate the trainer's token: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("dashboard: listen on %s: %w (choose another address with --listen)", opts.Listen, err)
	}
	collector := &dashboard.Collector{Home: opts.Home, URIs: opts.URIs, Log: f.Log,
		Connect: f.Connector()}
	defer collector.Close()
	srv := dashboard.New(dashboard.Options{Source: collector, Interval: opts.Interval, Token: token,
		TrainerToken: trainerToken, Faults: collector, Log: f.Log})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Requests live in ctx: Ctrl-C ends the open event streams at once.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String() + "/"
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		// Every interface: name the host, as a learner's browser would.
		if h, err := os.Hostname(); err == nil && h != "" {
			url = fmt.Sprintf("http://%s/", net.JoinHostPort(h, strconv.Itoa(tcp.Port)))
		}
	}
	trainerURL := url + "?trainer=" + trainerToken
	if token != "" {
		// Printed once, here; never logged.
		fmt.Fprintf(f.Streams.ErrOut, "dashboard on %s: open %s?token=%s (the token is shown only now; anyone with it can read the lab views)\n", ln.Addr(), url, token)
		trainerURL = url + "?token=" + token + "&trainer=" + trainerToken
	} else {
		fmt.Fprintf(f.Streams.ErrOut, "dashboard on %s: open %s (Ctrl-C stops it)\n", ln.Addr(), url)
	}
	fmt.Fprintf(f.Streams.ErrOut, "trainer's view, with the faults set on the labs (not for the projector; shown only now): %s\n", trainerURL)
	select {
	case <-ctx.Done():
	case err := <-served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("dashboard: %w", err)
		}
	}
	shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = hs.Shutdown(shut)
	return nil
}
