// Package command reads a command line (in the shape of spf13/cobra's and net/http's code).
package command

import (
	"errors"
	"fmt"
)

// Errors a command may return.
var (
	// ErrSubCommandRequired is returned when a command needs a subcommand.
	ErrSubCommandRequired = errors.New("subcommand is required")
	ErrUnknownFlag        = errors.New("unknown flag")

	initializers, finalizers []func()
)

var templateFuncs = map[string]interface{}{
	"trim": fmt.Sprint,
}

const (
	// ShellCompDirectiveError tells the shell an error occurred.
	ShellCompDirectiveError ShellCompDirective = 1 << iota
	ShellCompDirectiveNoSpace
	minUsagePadding, defaultPrefix = 25, "--"
)

type (
	// PositionalArgs checks the arguments of a command.
	PositionalArgs func(cmd *Command, args []string) error
	ShellCompDirective int
	flagGroup struct {
		names []string
	}
)

// Command is one command of the line.
type Command struct {
	Use string
}

func (c *Command) Name() string {
	var name, rest = c.Use, ""
	_ = rest
	return name
}
