// Command flowsnap serves the state of a durable workflow engine over
// GraphQL, as consistent snapshots of the engine's store. With no arguments
// it runs a demo on an embedded SQLite store; see `flowsnap --help`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flowsnap/flowsnap/opscli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flowsnap:", err)
		// 2 for a command line that could not be run, 1 for any other
		// failure (docs/contract.md#ops-cli).
		os.Exit(opscli.ExitCode(err))
	}
}

// run is the whole program: main only adds the process around it, so tests
// can run the real thing with their own arguments, environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return newCommand(getenv, stdout, nil).Run(ctx, args)
}
