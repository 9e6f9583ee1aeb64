package main

import (
	"go/ast"
	"strings"
)

// Sizes a reader can hold. A product file of the engine (the one
// component whose state a reader must keep in mind at once) stays under
// engineFileLines; every other product file under fileLines; every
// product function under funcLines. Test files and the test harnesses
// below are not product code and are not held to them.
const (
	engineDir       = "scheduler/internal/engine"
	engineFileLines = 450
	fileLines       = 500
	funcLines       = 80
)

// harness lists the packages that are test harnesses: conformance suites,
// test servers, the chaos checker. Their long table-driven functions read
// as the scripts they are.
func harness(dir string) bool {
	switch dir {
	case "internal/chaos", "internal/testserver", "internal/testlog", "leader/internal/fakedriver":
		return true
	}
	return strings.HasSuffix(dir, "test") // storetest, leadertest, difftest
}

func checkSizes(m *module, p *problems) {
	for _, pk := range m.pkgs {
		if harness(pk.dir) {
			continue
		}
		limit := fileLines
		if pk.dir == engineDir {
			limit = engineFileLines
		}
		for path, f := range pk.files {
			if n := m.fset.File(f.Pos()).LineCount(); n > limit {
				p.add("%s is %d lines, over %d: split it by what its parts do", path, n, limit)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				start, end := m.fset.Position(fd.Pos()), m.fset.Position(fd.End())
				if n := end.Line - start.Line + 1; n > funcLines {
					p.add("%s:%d: %s is %d lines, over %d: split it into named steps", path, start.Line, fd.Name.Name, n, funcLines)
				}
			}
		}
	}
}
