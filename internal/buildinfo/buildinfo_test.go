package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"slotcron's own binary", debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: Module, Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"slotcron v1.2.3, " + Module + " at abc (modified), go1.26"},
		{"a user's binary", debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "example.com/app", Version: "v0.1.0"},
			Deps: []*debug.Module{{Path: Module, Version: "v1.0.0", Replace: &debug.Module{Path: "../slotcron"}}}},
			"slotcron v1.0.0 => ../slotcron , go1.26"},
		{"without the module", debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "example.com/app"}},
			"slotcron (not a dependency), go1.26"},
		{"a working tree", debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: Module}}, "slotcron (devel), go1.26"},
	} {
		if got := describe(&c.bi).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
