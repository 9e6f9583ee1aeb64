// Package buildinfo describes the running binary's build of slotcron: the
// version of the slotcron module it was built with, the revision of the
// repository it was built from, and Go's version. The CLI's version
// command, the slotcron_build_info metric and each replica's beat all say
// the same thing, from here.
package buildinfo

import "runtime/debug"

// Module is slotcron's module path.
const Module = "github.com/slotcron/slotcron"

// Info is one build's description.
type Info struct {
	// Version is slotcron's module version: the main module's when the
	// binary is slotcron's own, else the dependency's, with its
	// replacement; "(devel)" for a build from a working tree, "unknown"
	// without build information.
	Version string
	// Main is the main module's path, and Revision and Modified the VCS
	// revision it was built from and whether its tree had changes; empty
	// and false when not built from a repository.
	Main, Revision string
	Modified       bool
	GoVersion      string
}

// Read describes the running binary.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown", GoVersion: "unknown"}
	}
	return describe(bi)
}

func describe(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Main: bi.Main.Path, GoVersion: bi.GoVersion}
	if bi.Main.Path != Module {
		in.Version = "(not a dependency)"
		for _, d := range bi.Deps {
			if d.Path == Module {
				in.Version = d.Version
				if d.Replace != nil {
					in.Version += " => " + d.Replace.Path + " " + d.Replace.Version
				}
			}
		}
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			in.Revision = kv.Value
		case "vcs.modified":
			in.Modified = kv.Value == "true"
		}
	}
	return in
}

// String is the one-line description the version command prints.
func (in Info) String() string {
	out := "slotcron " + in.Version
	if in.Revision != "" {
		out += ", " + in.Main + " at " + in.Revision
		if in.Modified {
			out += " (modified)"
		}
	}
	return out + ", " + in.GoVersion
}
