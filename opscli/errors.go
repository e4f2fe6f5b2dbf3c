package opscli

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"
)

// The exit codes of the ops commands (docs/contract.md#ops-cli).
const (
	ExitOK    = 0 // the command did what was asked
	ExitError = 1 // the API answered with an error, or the server could not be reached
	ExitUsage = 2 // the command line was wrong: nothing was asked of the server
)

// usageError is a command line that cannot be run as given.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// ExitCode is the exit code for err, an error returned by running the
// command line: ExitUsage for a usage error, ExitError for any other, and
// ExitOK for nil.
func ExitCode(err error) int {
	var u *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &u):
		return ExitUsage
	}
	return ExitError
}

// onUsageError makes urfave/cli's own complaints (an unknown flag, a value
// that does not parse, a missing argument) usage errors.
func onUsageError(_ context.Context, _ *cli.Command, err error, _ bool) error {
	return &usageError{err}
}

// Usage makes err a usage error: a command line that cannot be run as
// given, which exits with ExitUsage.
func Usage(err error) error {
	return &usageError{err}
}
