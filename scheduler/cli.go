package scheduler

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/slotcron/slotcron/internal/buildinfo"
	"github.com/slotcron/slotcron/jobs"
)

// Exit codes of the CLI.
const (
	// ExitOK: success, or run shut down cleanly on SIGTERM or SIGINT.
	ExitOK = 0
	// ExitFailure: a runtime failure, or a command stopped by SIGTERM or
	// SIGINT before it finished: validate, or run before the scheduler
	// started (while it loads the configuration or opens the store).
	ExitFailure = 1
	// ExitUsage: bad configuration or usage.
	ExitUsage = 2
)

// Main gives a binary the slotcron CLI (run, validate, next, history,
// trigger, backfill, diff, jobs, audit, schedules, pause, resume, version,
// help) over the jobs registered in reg, and exits with the command's exit
// code.
//
// SIGTERM or SIGINT stops the command: run shuts down gracefully (exit 0)
// once the scheduler has started, and every command stops at once, with
// exit 1, before then. A second signal ends the process at once.
//
// opts configure the scheduler that run starts (WithClock, WithRegistry,
// ...); run's logger is built from the configuration unless an option
// replaces it.
func Main(reg *jobs.Registry, opts ...Option) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the default action is back: the second one
	// ends the process, whatever it is waiting for.
	context.AfterFunc(ctx, stop)
	code := Command(ctx, os.Args[1:], os.Stdout, os.Stderr, reg, opts...)
	stop()
	os.Exit(code)
}

const usage = `usage: %[1]s <command> [flags]

commands:
  run       run the scheduler until SIGTERM or SIGINT
  validate  check the configuration and print every problem
  next      print the next slots of a job (or of --schedule)
  history   print the store's markers, newest slot first
  trigger   run a job now, here, as a manual slot (obeys overlap)
  backfill  run, here, a job's slots in a range that never ran (--dry-run lists them)
  diff      compare the file's jobs with the catalog in force (exit 1 on a change)
  jobs      list the store's catalog: each job's spec in force, its source, conflicts
  audit     list a window's slots with their fates (exit 1 if any is unaccounted)
  schedules put, get, list, delete, pause or resume schedules held as data (per tenant)
  pause     pause a job, or with no job the whole cluster, on every replica (--reason)
  resume    resume a job, or with no job the whole cluster (--reason)
  actions   list who paused, triggered, backfilled or wrote schedules, and config revisions
  version   print slotcron's version, the binary's revision and Go's version

common flags:
  --config FILE   configuration file (default $SLOTCRON_CONFIG, else slotcron.yaml)

JOB, where a command takes one, is the name of a job in the configuration file
(a key under jobs:).

exit status: 0 success, or run shut down by SIGTERM or SIGINT; 1 runtime failure,
or stopped by a signal before it finished (run: before the scheduler started);
2 bad configuration or usage. A second signal ends the process at once. diff and
audit are checks: 0 nothing found, 1 changes or unaccounted slots, 2 any error.

Run '%[1]s help <command>' or '%[1]s <command> -h' for a command's flags.
`

// Command runs one CLI command with args (without the program name) and
// returns its exit code. Main calls it; tests can too. opts configure the
// scheduler of the run command, as in Main.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry, opts ...Option) int {
	prog := "scheduler"
	if len(args) == 0 {
		fmt.Fprintf(stderr, usage, prog)
		return ExitUsage
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" && len(rest) == 1 && rest[0] != "help" {
		cmd, rest = rest[0], []string{"-h"} // help CMD is CMD -h
	}
	if slices.ContainsFunc(rest, isHelpFlag) {
		stderr = stdout // asked for: the usage is the output
	}
	var err error
	switch cmd {
	case "run":
		err = cmdRun(ctx, rest, stderr, reg, opts)
	case "validate":
		err = cmdValidate(ctx, rest, stdout, stderr, reg)
	case "next":
		err = cmdNext(ctx, rest, stdout, stderr, reg)
	case "history":
		err = cmdHistory(ctx, rest, stdout, stderr, reg)
	case "trigger":
		err = cmdTrigger(ctx, rest, stdout, stderr, reg)
	case "backfill":
		err = cmdBackfill(ctx, rest, stdout, stderr, reg)
	case "diff":
		err = asCheck(cmdDiff(ctx, rest, stdout, stderr, reg))
	case "jobs":
		err = cmdJobs(ctx, rest, stdout, stderr, reg)
	case "audit":
		err = asCheck(cmdAudit(ctx, rest, stdout, stderr, reg))
	case "pause":
		err = cmdPause(ctx, "pause", true, rest, stdout, stderr, reg)
	case "resume":
		err = cmdPause(ctx, "resume", false, rest, stdout, stderr, reg)
	case "schedules":
		err = cmdSchedules(ctx, rest, stdout, stderr, reg)
	case "actions":
		err = cmdActions(ctx, rest, stdout, stderr, reg)
	case "help", "-h", "--help":
		fmt.Fprintf(stdout, usage, prog)
		return ExitOK
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, buildinfo.Read())
		return ExitOK
	default:
		fmt.Fprintf(stderr, "%s: unknown command %q\n", prog, cmd)
		fmt.Fprintf(stderr, usage, prog)
		return ExitUsage
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errFound):
		return ExitFailure // printed with what was found
	case errors.Is(err, errUsage), IsConfigError(err):
		if !errors.Is(err, errReported) {
			fmt.Fprintln(stderr, err)
			if errors.Is(err, errUsage) {
				fmt.Fprintf(stderr, "Run '%s help %s' for usage.\n", prog, cmd)
			}
		}
		return ExitUsage
	case errors.As(err, new(checkError)):
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, cmd, err)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, cmd, err)
		return ExitFailure
	}
}

// isHelpFlag reports whether arg asks for a command's usage.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

var (
	errUsage    = errors.New("usage")
	errReported = errors.New("already reported")
)

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Is(t error) bool {
	return t == errUsage
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := os.Getenv("SLOTCRON_CONFIG")
	if def == "" {
		def = "slotcron.yaml"
	}
	return fs, fs.String("config", def, "the configuration `FILE`; $SLOTCRON_CONFIG names it if set")
}

// jobArg is what every command that takes a job says of it.
const jobArg = "JOB is the name of a job in the configuration file (a key under jobs:)."

// maxCount bounds -n of next and history, as the API bounds its limit.
const maxCount = 10000

// checkCount refuses a -n of cmd outside 1 to maxCount.
func checkCount(cmd string, n int) error {
	if n < 1 || n > maxCount {
		return usageError{msg: fmt.Sprintf("%s: -n %d: want 1 to %d", cmd, n, maxCount)}
	}
	return nil
}

// setUsage makes fs's usage, which -h, help CMD and a bad flag print,
// name the command's arguments (args, after its flags) and say what it
// does (about: lines of at most 80 columns).
func setUsage(fs *flag.FlagSet, args, about string) {
	fs.Usage = func() {
		synopsis := "scheduler " + fs.Name() + " [flags]"
		if args != "" {
			synopsis += " " + args
		}
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n\nflags:\n", synopsis, strings.TrimSpace(about))
		fs.PrintDefaults()
	}
}

// parseFlags parses a command's flags and refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlagsArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{msg: fmt.Sprintf("%s: unexpected argument %q", fs.Name(), pos[0])}
	}
	return nil
}

func cmdRun(ctx context.Context, args []string, stderr io.Writer, reg *jobs.Registry, opts []Option) error {
	fs, path := newFlags("run", stderr)
	setUsage(fs, "", `
Runs the scheduler until SIGTERM or SIGINT: claims each slot of the configured
jobs in the store, runs the slots it wins, and campaigns for the duties. On the
first signal it stops claiming, gives running jobs shutdown_grace, then releases
their slots to the other replicas and exits 0. Warnings about the configuration
(an empty file, no jobs) are logged, and it runs anyway. SIGHUP reloads the
file: a file that does not validate changes nothing (its errors are logged);
a good one adds, removes and reschedules jobs without a restart.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := interruptible(ctx, "before the scheduler started", func(ctx context.Context) (*Scheduler, error) {
		cfg, err := loadAndValidate(ctx, *path, reg)
		if err != nil {
			return nil, err
		}
		s, err := New(cfg, reg, append([]Option{WithLogger(newLogger(cfg.Log, stderr))}, opts...)...)
		if err != nil {
			return nil, err
		}
		for _, w := range cfg.Warnings() {
			s.log.Warn("configuration warning", "file", w.File, "line", w.Line, "key", w.Key, "warning", w.Msg)
		}
		return s, nil
	})
	if err != nil {
		return err
	}
	stopHUP := s.reloadOnHangup(ctx, *path)
	defer stopHUP()
	if err := s.Run(ctx); err != nil {
		if ctx.Err() != nil {
			// Run gives up its start-up (opening the store) when ctx ends.
			return interrupted(ctx, "while the scheduler started", err)
		}
		return err
	}
	return nil
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer, reg *jobs.Registry) error {
	fs, path := newFlags("validate", stderr)
	setUsage(fs, "", `
Checks the configuration file against the jobs and duties this binary registers,
without starting anything, and prints every problem as file:line: key: message
(exit 2), or "ok" (exit 0). Warnings (an empty file, no jobs and no duties) are
printed too, and do not fail it.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(ctx, *path, reg)
	var errs ConfigErrors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stderr, "%d problem(s) in %s\n", len(errs), *path)
		return fmt.Errorf("%w: %w", errReported, err)
	}
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: ok, %s, %s\n", *path, plural(len(cfg.Jobs), "job", "jobs"), plural(len(cfg.Duties), "duty", "duties"))
	return nil
}

// plural is "1 job", "2 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// parseFlagsArgs parses a command's flags, before and after its positional
// arguments (trigger hello --config x), and returns the positional
// arguments; after "--" every argument is positional.
func parseFlagsArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			// fs printed it, and the usage, already.
			return nil, fmt.Errorf("%w: %w", errReported, usageError{msg: err.Error()})
		}
		if fs.NArg() == 0 {
			return append(pos, rest...), nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
