// Command check keeps the promises of the code's shape that no compiler
// keeps: the Layout in docs/layout.md against the packages `go list`
// finds, the exported-identifier budgets in budgets.txt, file and function
// sizes, and the admin API reaching the store only through the engine.
// `make check` runs it from the repository's root; it prints every broken
// promise, each naming the file and what to do, and exits 1 if there is one.
package main

import (
	"flag"
	"fmt"
	"os"
)

// problems collects what each check found.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func main() {
	root := flag.String("root", ".", "the repository's root")
	counts := flag.Bool("counts", false, "print each public package's exported identifiers and exit")
	flag.Parse()
	if err := os.Chdir(*root); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(2)
	}
	mod, err := loadModule()
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(2)
	}
	if *counts {
		for _, pk := range mod.pkgs {
			if public(pk.dir) && pk.name != "main" {
				fmt.Printf("pkg %-24s %d\n", pk.dir, exported(pk))
			}
		}
		return
	}
	var p problems
	checkLayout(mod, &p)
	checkBudgets(mod, &p)
	checkSizes(mod, &p)
	checkAdminStore(mod, &p)
	for _, s := range p {
		fmt.Fprintln(os.Stderr, "check:", s)
	}
	if len(p) > 0 {
		fmt.Fprintf(os.Stderr, "check: %d problem(s)\n", len(p))
		os.Exit(1)
	}
	fmt.Printf("check: layout, budgets, sizes and admin→engine hold (%d packages)\n", len(mod.pkgs))
}
